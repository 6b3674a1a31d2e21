"""The least a guarded spawn can cost: one request, a blocking wait for "gone", no event loop.

Benchmarks set a tool's cost against it: whatever the tool adds on top of this is the tool's;
what this adds on top of `subprocess.run` is the guard's hop, the price of containment.
"""

from __future__ import annotations

import json
import os
import select
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

        Blocking, Linux only. stdin is /dev/null; stdout and stderr are pipes, read and discarded
        as they fill, so a flooding command cannot stall it and nothing is kept.

        Raises:
            RuntimeError: the guard refused the command or went away.
        """
        from subagent_core import _containment, _guard_server

        stdin = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            header = json.dumps({"argv": list(argv), "cwd": str(cwd)}).encode()
            payload = header + b"\0" + _containment.environment_text(env)
            ctl = _guard_server.guard_server().send(b"R", payload, [stdin, out_write, err_write])
        finally:
            for fd in (stdin, out_write, err_write):
                os.close(fd)
        code: int | None = None
        watched = [ctl.fileno(), out_read, err_read]
        try:
            gone = False
            while not gone:
                for fd in select.select(watched, [], [])[0]:
                    if fd != ctl.fileno():
                        if not os.read(fd, 65536):
                            watched.remove(fd)
                        continue
                    message = ctl.recv(256).decode("ascii", "replace")
                    if not message or message.startswith("error"):
                        raise RuntimeError("the guard refused the command or went away")
                    for line in message.split("\n"):
                        kind, _, value = line.partition(" ")
                        if kind == "exit":
                            code = int(value)
                    gone = message.endswith("gone")
        except BaseException:
            ctl.close()
            raise
        finally:
            os.close(out_read)
            os.close(err_read)
        if not _guard_server.guard_server().recycle(ctl):
            ctl.close()
        if code is None:
            raise RuntimeError("the guard reported no exit code")
        return code
