"""The least a guarded spawn can cost: one request, a blocking wait for "gone", no event loop.

Benchmarks set a tool's cost against it: whatever the tool adds on top of this is the tool's;
what this adds on top of `subprocess.run` is the guard's hop, the price of containment.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

if sys.platform == "win32":

    def guarded_round_trip(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> int:
        """There are no guards on Windows."""
        raise RuntimeError("guarded spawns are Linux only")

else:

    def guarded_round_trip(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> int:
        """Runs `argv` under a guard until the guard reports its tree gone; the leader's exit code.

        Blocking, Linux only. stdin is /dev/null; stdout and stderr are pipes read once at the end
        (keep the output under a pipe's 64 KiB).

        Raises:
            RuntimeError: the guard refused the command or went away.
        """
        from subagent_core import _containment

        stdin = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            header = json.dumps({"argv": list(argv), "cwd": str(cwd)}).encode()
            payload = header + b"\0" + _containment.environment_text(env)
            ctl = _containment.guard_server().send(b"R", payload, [stdin, out_write, err_write])
        finally:
            for fd in (stdin, out_write, err_write):
                os.close(fd)
        code: int | None = None
        try:
            ctl.setblocking(True)
            while True:
                message = ctl.recv(256).decode("ascii", "replace")
                if not message or message.startswith("error"):
                    raise RuntimeError("the guard refused the command or went away")
                for line in message.split("\n"):
                    kind, _, value = line.partition(" ")
                    if kind == "exit":
                        code = int(value)
                if message.endswith("gone"):
                    break
            os.read(out_read, 65536)
            os.read(err_read, 65536)
        except BaseException:
            ctl.close()
            raise
        finally:
            os.close(out_read)
            os.close(err_read)
        if not _containment.guard_server().recycle(ctl):
            ctl.close()
        if code is None:
            raise RuntimeError("the guard reported no exit code")
        return code
