"""The detached guard launch: how a host actor starts a child that Ray's cleanup cannot orphan.

Ray ends an actor by SIGKILLing its worker's process group and its direct children. A guard
started as the worker's plain child dies with it, and the agent's tree escapes to PID 1. So the
host starts a short-lived launcher in a new session (`posix_spawn(setsid=True)`); the launcher
forks a watcher and exits at once. The watcher (no longer anyone's child in the worker, out of
its group) runs the unchanged containment guard (`subagent_core.guard`, command mode) and
writes two facts to a status pipe: `pid N` (the guard) and `exit C` (the guard's exit code, the
agent's, once its whole tree is gone). The guard's stdin is a pipe whose only write end the
host holds: when the host closes it — or dies by any means, the kernel closing it then — the
guard runs its ladder and kills the tree. Standard library only; runs with `python -I -S`.
"""

from __future__ import annotations

LAUNCHER = """
import os, signal, sys
status = 3
os.closerange(4, os.sysconf("SC_OPEN_MAX"))
if os.fork():
    os._exit(0)
os.set_inheritable(status, False)
for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
    signal.signal(sig, signal.SIG_IGN)
cwd, argv = sys.argv[1], sys.argv[2:]
try:
    os.chdir(cwd)
    guard = os.posix_spawn(
        sys.executable, [sys.executable, "-I", "-S", *argv], os.environ,
        setsigdef=(signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE),
    )
except OSError:
    os.write(status, b"exit 126\\n")
    os._exit(0)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
os.write(status, b"pid %d\\n" % guard)
while True:
    try:
        _, code = os.waitpid(guard, 0)
        break
    except InterruptedError:
        continue
code = os.waitstatus_to_exitcode(code)
os.write(status, b"exit %d\\n" % (code if code >= 0 else 128 - code))
"""
"""`python -I -S -c LAUNCHER CWD GUARD-PATH --eof-grace S --term-grace S -- CMD ARGS…`.

The watcher enters CWD before it starts the guard (`posix_spawn` here cannot change
directory), so the guard and the agent start there: the run's workspace, not the worker's.

fd 0/1/2 are the child's stdio pipes, fd 3 the status pipe; every other descriptor is closed
first, so no other child's stdin write end can leak into this tree (it would keep that
child's guard from ever seeing EOF). The watcher ignores the signals a session teardown
sends: only the guard decides when the tree ends.
"""


def launcher_argv(
    python: str, cwd: str, guard: str, argv: list[str], eof_grace: float, term_grace: float
) -> list[str]:
    """The launcher's argv for one child that starts in `cwd`."""
    return [
        python,
        "-I",
        "-S",
        "-c",
        LAUNCHER,
        cwd,
        guard,
        "--eof-grace",
        repr(eof_grace),
        "--term-grace",
        repr(term_grace),
        "--",
        *argv,
    ]
