"""The host's guard server: one per host process, started on first use, forking idle guards.

This module owns the server process and the hand-over of guards (which socket a spawn
request goes to); `_containment` owns one run — its control-socket link, its pipes and the
`anyio` process built on them. The server is started with `python -I -S guard.py --server` in
its own session; it forks an idle guard ahead of need and hands its socket to us, so a spawn
costs one message to a running guard, not a fork.
"""

from __future__ import annotations

import sys

if sys.platform == "win32":  # pragma: no cover - Windows contains trees with Job Objects
    raise ImportError("guarded spawns are POSIX only")

import contextlib
import functools
import os
import socket
import threading
from collections.abc import Sequence
from pathlib import Path

GUARD_SCRIPT = Path(__file__).with_name("guard.py")
"""The guard, standard library only: run as `python -I -S guard.py --server` (or `-- CMD`)."""

_REUSABLE_GUARDS = 1
"""Finished guards kept for reuse: a warm guard spawns faster than a freshly forked one.

One, so the descriptors a host holds do not grow with its peak concurrency."""


@functools.cache
def available() -> bool:
    """True where the guard can work: Linux with a Python interpreter to run it."""
    return sys.platform.startswith("linux") and bool(sys.executable) and GUARD_SCRIPT.is_file()


class _GuardServer:
    """The host's connection to its guard server; restarted when it died or the host forked.

    The server hands over idle guards ahead of need (`G` + a socket): a spawn sends its
    request straight to one and asks for a replacement (`N`), so no server hop and no fork is
    on the path of a spawn. Without an idle guard at hand, the request goes via the server.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._pid: int | None = None
        self._owner = 0
        self._idle: list[socket.socket] = []
        self._reusable: list[socket.socket] = []

    @property
    def pid(self) -> int | None:
        return self._pid if self._owner == os.getpid() else None

    def send(self, kind: bytes, payload: bytes, stdio: Sequence[int]) -> socket.socket:
        """Sends one spawn request to a guard; returns our end of its control socket.

        `kind` is `R` (payload inline) or `M` (payload empty; the memfd is the last fd). A
        guard that finished a run is reused first (its control socket carries the request),
        then a fresh idle guard, then the server (which forks one). Starts or restarts the
        server when needed.
        """
        with self._lock:
            self._ensure()
            while self._reusable:
                ctl = self._reusable.pop()
                try:
                    ctl.sendmsg([kind + payload], [_rights(stdio)])
                    return ctl
                except OSError:
                    ctl.close()  # that guard died; try the next one
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                self._send_fresh(kind + payload, [_rights([theirs.fileno(), *stdio])])
            except BaseException:
                ours.close()
                raise
            finally:
                theirs.close()
            return ours

    def _send_fresh(self, data: bytes, rights: list[tuple[int, int, bytes]]) -> None:
        for attempt in (1, 2):
            sock = self._ensure()
            self._collect_offers(sock)
            while self._idle:
                link = self._idle.pop()
                try:
                    link.sendmsg([data], rights)
                except OSError:
                    continue  # that idle guard died; try the next one
                finally:
                    link.close()
                with contextlib.suppress(OSError):
                    sock.send(b"N")
                return
            try:
                sock.sendmsg([data], rights)
                return
            except (BrokenPipeError, ConnectionError):
                self._drop()
                if attempt == 2:
                    raise

    def recycle(self, ctl: socket.socket) -> bool:
        """Keeps a guard whose run is over (it reported "gone") for the next spawn.

        False when the pool is full or the socket belongs to another process's pool; the
        caller then closes it, and the guard exits.
        """
        with self._lock:
            if self._owner != os.getpid() or len(self._reusable) >= _REUSABLE_GUARDS:
                return False
            self._reusable.append(ctl)
            return True

    def _collect_offers(self, sock: socket.socket) -> None:
        """Takes every idle guard the server has offered so far (never blocks)."""
        while True:
            try:
                data, ancillary, _flags, _addr = sock.recvmsg(
                    16, socket.CMSG_SPACE(4 * 4), socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC
                )
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            fds = [
                int.from_bytes(payload[i : i + 4], sys.byteorder)
                for level, kind, payload in ancillary
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS
                for i in range(0, len(payload) - len(payload) % 4, 4)
            ]
            if not data:
                return
            self._idle.extend(socket.socket(fileno=fd) for fd in fds)

    def _ensure(self) -> socket.socket:
        if self._sock is not None and self._owner == os.getpid():
            return self._sock
        if self._owner != os.getpid():
            # A forked host shares its parent's server and idle guards; it gets its own.
            for link in [*self._idle, *self._reusable]:
                link.close()
            self._idle = []
            self._reusable = []
            self._sock = None
            self._pid = None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._pid = _start_server(theirs.fileno())
        finally:
            theirs.close()
        # Blocking: a timeout would make every `MSG_DONTWAIT` receive wait for it first.
        # Sends are tiny and the server reads at once.
        ours.setblocking(True)
        self._sock = ours
        self._owner = os.getpid()
        return ours

    def forget(self) -> None:
        """In a forked child: closes the inherited copies of the parent's sockets."""
        self._lock = threading.Lock()
        for sock in [*self._idle, *self._reusable]:
            sock.close()
        if self._sock is not None:
            self._sock.close()
        self._idle = []
        self._reusable = []
        self._sock = None
        self._pid = None
        self._owner = 0

    def _drop(self) -> None:
        for link in self._idle:
            link.close()
        self._idle = []
        if self._sock is not None:
            self._sock.close()
        if self._pid is not None:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(self._pid, os.WNOHANG)
        self._sock = None
        self._pid = None


_SERVER = _GuardServer()
# A forked host must not keep its parent's guards alive (they end when their owner's sockets
# close): the child drops its copies and starts its own server when it spawns.
os.register_at_fork(after_in_child=_SERVER.forget)


def guard_server() -> _GuardServer:
    """This process's connection to its guard server (for the blocking floor in testing)."""
    return _SERVER


def guard_server_pid() -> int | None:
    """The pid of this process's guard server, if one runs (test support excludes it)."""
    return _SERVER.pid


def _start_server(sock_fd: int) -> int:
    """Starts `guard.py --server` in its own session with `sock_fd` as its stdin."""
    actions: list[tuple[int, int] | tuple[int, int, int] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_DUP2, sock_fd, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        # Not our stderr: a reader waiting for EOF on it must not wait for the server too.
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    # posix_spawn keeps inheritable descriptors open; the server must hold none of ours.
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != sock_fd:
            with contextlib.suppress(OSError):
                if os.get_inheritable(fd):
                    actions.append((os.POSIX_SPAWN_CLOSE, fd))
    env = {name: os.environ[name] for name in ("PATH", "LD_LIBRARY_PATH") if name in os.environ}
    argv = [sys.executable, "-I", "-S", str(GUARD_SCRIPT), "--server"]
    return os.posix_spawn(sys.executable, argv, env, file_actions=actions, setsid=True)


def _rights(fds: Sequence[int]) -> tuple[int, int, bytes]:
    return (
        socket.SOL_SOCKET,
        socket.SCM_RIGHTS,
        b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds),
    )
