"""A flooding child: runs a real fake child and floods tiny garbage lines between its frames.

`python bench/_garbage_wrap.py GATE CMD ARGS...`: CMD reads this process's stdin directly; its
stdout lines are relayed whole. While the file GATE exists, a second thread writes `not json`
lines as fast as the reader takes them (it touches `GATE.<pid>` once it floods), so the bench
floods only after every flooder's handshake and stops the flood before tearing them down. Both
writers share one lock, so a frame is never split by garbage, and a frame waiting to be relayed
goes before the next garbage chunk. It exits when CMD exits or its reader goes away. Standard
library only, so it starts in a few milliseconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

_LOCK = threading.Lock()
_RELAY_IDLE = threading.Event()
_GARBAGE = b"not json\n" * 64
_POLL = 0.005


def _write(data: bytes) -> None:
    view = memoryview(data)
    with _LOCK:
        while view:
            view = view[os.write(1, view) :]


def _flood(gate: Path) -> None:
    announced = False
    stop = threading.Event()
    try:
        while True:
            while not gate.exists():
                stop.wait(_POLL)
            if not announced:
                gate.with_name(f"{gate.name}.{os.getpid()}").touch()
                announced = True
            for _ in range(64):
                _RELAY_IDLE.wait()
                _write(_GARBAGE)
    except OSError:
        os._exit(0)


def main() -> int:
    gate = Path(sys.argv[1])
    child = subprocess.Popen(sys.argv[2:], stdout=subprocess.PIPE)
    assert child.stdout is not None
    _RELAY_IDLE.set()
    threading.Thread(target=_flood, args=(gate,), daemon=True).start()
    try:
        for line in child.stdout:
            _RELAY_IDLE.clear()
            _write(line)
            _RELAY_IDLE.set()
    except OSError:
        child.kill()
    os._exit(child.wait() & 0xFF)


if __name__ == "__main__":
    sys.exit(main())
