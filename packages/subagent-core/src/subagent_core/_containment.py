"""Linux containment: every managed process is started by a guard that owns its whole tree.

The guard (`subagent_core.guard`) is a child subreaper, so a `setsid` sleeper, a double-forked
daemon or a process that cleared its environment still re-parents to it, never to PID 1. Guards
come from one guard server per host process, started on first use with `python -I -S`; it
forks an idle guard ahead of need and hands its socket to us, so a spawn costs one message to
a running guard and a `posix_spawn`, not an interpreter start or a fork. Each run talks to its own guard over a control
socket (`SOCK_SEQPACKET`): `pid N` / `error REASON`, then `exit RC` and `gone` arrive as
messages, so waiting needs no thread, no poll and no `/proc` scan. Closing the socket — or the
death of this process by any signal — makes the guard SIGKILL the tree.
"""

from __future__ import annotations

import sys

if sys.platform == "win32":  # pragma: no cover - Windows contains trees with Job Objects
    raise ImportError("guarded spawns are POSIX only")

import asyncio
import contextlib
import fcntl
import functools
import json
import os
import signal
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import anyio
import anyio.abc
import anyio.lowlevel

from ._pipe_reader import PipeReader

GUARD_SCRIPT = Path(__file__).with_name("guard.py")
"""The guard, standard library only: run as `python -I -S guard.py --server` (or `-- CMD`)."""

# Test seam: called (synchronously) right after a spawn request went to the guard server and
# before its answer is awaited — the window in which a cancel must not leak the new process.
request_listeners: list[Callable[[], None]] = []

_INLINE_REQUEST_BYTES = 60_000
_REUSABLE_GUARDS = 1
"""Finished guards kept for reuse: a warm guard spawns faster than a freshly forked one.

One, so the descriptors a host holds do not grow with its peak concurrency."""
_PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031


class GuardRefusedError(Exception):
    """The guard could not start the command; `reason` is a closed value.

    `os_error` is the OS error the guard saw (its number only), when it reported one.
    """

    def __init__(self, reason: str, errno_value: int | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.os_error = (
            None if errno_value is None else OSError(errno_value, os.strerror(errno_value))
        )


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


class _Link:
    """This side of one guard's control socket, and the facts it has reported.

    While anyone has waited on it, the socket stays registered with the loop: each message is
    applied as it arrives and wakes only the waiters whose condition it made true, so a wait
    costs no registration, no lock and no failed read.
    """

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.pid: int | None = None
        self.refused: str | None = None
        self.refused_errno: int | None = None
        self.returncode: int | None = None
        self.gone = False
        self.closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        """Set while the socket is registered for reading."""
        self._waiters: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []

    def poll(self) -> None:
        """Applies every message already received (never blocks)."""
        while not self.closed:
            try:
                data = self.sock.recv(256)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            self._apply(data)
        self._wake()

    def _on_readable(self) -> None:
        # One message per call: readiness is level-triggered, so the next one calls again.
        try:
            data = self.sock.recv(256)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        self._apply(data)
        self._wake()

    def _apply(self, data: bytes) -> None:
        if not data:
            self.closed = True
            self._unregister()
            if self.pid is None and self.refused is None:
                self.refused = "os-error"
            return
        for line in data.decode("ascii", "replace").split("\n"):
            kind, _, value = line.partition(" ")
            if kind == "pid":
                self.pid = int(value)
            elif kind == "error":
                reason, _, number = value.partition(" ")
                self.refused = reason
                self.refused_errno = int(number) if number.isdigit() else None
            elif kind == "exit":
                self.returncode = int(value)
            elif kind == "gone":
                self.gone = True

    def _wake(self) -> None:
        for done, waiter in self._waiters:
            if (self.closed or done()) and not waiter.done():
                waiter.set_result(None)

    def _register(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None:
            loop = asyncio.get_running_loop()
            loop.add_reader(self.sock.fileno(), self._on_readable)
            self._loop = loop
        return loop

    def _unregister(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed():
            loop.remove_reader(self.sock.fileno())

    async def until(self, done: Callable[[], bool]) -> bool:
        """Waits until `done()` holds or the guard closed the socket (cancellable).

        Returns whether it waited: a wait is a schedule point, an answer already in hand is not.
        """
        if done() or self.closed:
            return False
        if self._loop is None:
            self.poll()  # what came before the registration
        waited = False
        while not done() and not self.closed:
            waiter = self._register().create_future()
            entry = (done, waiter)
            self._waiters.append(entry)
            try:
                await waiter
            finally:
                self._waiters.remove(entry)
            waited = True
        return waited

    def send(self, command: str) -> None:
        """Sends a command to the guard; a guard that is gone needs none."""
        if self.closed:
            return
        with contextlib.suppress(OSError):
            self.sock.send(command.encode("ascii"))

    def hang_up(self) -> None:
        """Tells the guard we are done: it SIGKILLs whatever is left, reaps it and exits."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._unregister()
        self.closed = True
        self.sock.close()

    def release(self) -> None:
        """Done with this run: a guard that reported "gone" is reused, any other hung up on."""
        if self.sock.fileno() < 0:
            return
        self._unregister()
        if not self.gone:
            self.poll()
        reusable = self.gone and not self.closed
        self.closed = True
        if reusable and _SERVER.recycle(self.sock):
            return
        self.hang_up()
        self.sock.close()


class _PipeEnd:
    """Our non-blocking end of a child's stdin pipe; closing it never waits.

    (The read ends are `PipeReader`s, registered with the loop once.)"""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd

    def close(self) -> None:
        """Closes the descriptor at once (a task waiting on it is woken with an error)."""
        _close_fd(self._fd)
        self._fd = -1

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()


class _PipeSendStream(_PipeEnd, anyio.abc.ByteSendStream):
    """Our write end of a child's stdin pipe."""

    async def send(self, item: bytes) -> None:
        await anyio.lowlevel.checkpoint_if_cancelled()
        view = memoryview(item)
        while view:
            if self._fd < 0:
                raise anyio.ClosedResourceError
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
            except OSError as error:
                raise anyio.BrokenResourceError from error
        await anyio.lowlevel.cancel_shielded_checkpoint()


def _close_fd(fd: int) -> None:
    if fd < 0:
        return
    with contextlib.suppress(RuntimeError, anyio.NoEventLoopError):
        anyio.notify_closing(fd)
    with contextlib.suppress(OSError):
        os.close(fd)


class GuardedProcess(anyio.abc.Process):
    """A process started by its own guard; `returncode` and `wait()` are the leader's."""

    def __init__(
        self,
        link: _Link,
        stdin: _PipeSendStream | None,
        stdout: PipeReader | None,
        stderr: PipeReader | None,
    ) -> None:
        assert link.pid is not None
        self._link = link
        self._pid = link.pid
        self._stdin = stdin
        self._stdout = stdout
        self._stderr = stderr

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def returncode(self) -> int | None:
        if self._link.returncode is None:
            self._link.poll()
        return self._link.returncode

    @property
    def stdin(self) -> anyio.abc.ByteSendStream | None:
        return self._stdin

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream | None:
        return self._stdout

    @property
    def stderr(self) -> anyio.abc.ByteReceiveStream | None:
        return self._stderr

    @property
    def exit_known(self) -> bool:
        """True once the leader's exit is reported, or the guard can report nothing more."""
        if self._link.returncode is None:
            self._link.poll()
        return self._link.returncode is not None or self._link.closed

    async def wait_exit(self) -> int | None:
        """Waits for the leader's exit; its returncode, or `None` if the guard died first."""
        await self._link.until(lambda: self._link.returncode is not None)
        return self._link.returncode

    async def wait(self) -> int:
        code = await self.wait_exit()
        return -signal.SIGKILL if code is None else code

    def send_signal(self, signal: int) -> None:
        """Signals the leader alone (as `anyio.abc.Process` does)."""
        self._link.send(f"signal {int(signal)}")

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    # -- the tree ---------------------------------------------------------------------------

    def tree_gone(self) -> bool:
        """True once the guard reported that no process of the tree is left."""
        if not self._link.gone:
            self._link.poll()
        return self._link.gone

    async def wait_tree_gone(self) -> bool:
        """Waits until the tree is gone (True) or the guard is gone without saying so (False)."""
        await self._link.until(lambda: self._link.gone)
        return self._link.gone

    def signal_tree(self, step: str) -> None:
        """`term` or `kill`: the guard signals every live member of the tree."""
        self._link.send(step)

    def release(self) -> None:
        """Closes our pipe ends; hands a finished guard back for reuse, or hangs up on it.

        Hanging up makes the guard SIGKILL whatever is left of the tree and exit. Never blocks.
        """
        for stream in (self._stdin, self._stdout, self._stderr):
            if stream is not None:
                stream.close()
        self._link.release()

    async def aclose(self) -> None:
        self.release()
        await anyio.lowlevel.checkpoint()


_last_environment: tuple[dict[str, str], bytes] = ({}, b"{}")


def environment_text(env: Mapping[str, str]) -> bytes:
    """`env` as the request's JSON; encoded once while spawns keep passing the same one.

    The guard also decodes an unchanged text only once. JSON never holds a raw NUL, so the
    NUL before it in the request is a safe separator.
    """
    global _last_environment
    last, text = _last_environment
    if env != last:
        copy = dict(env)
        text = json.dumps(copy).encode()
        _last_environment = (copy, text)
    return text


def _enlarge(read_fd: int) -> None:
    """Gives an output pipe a 1 MiB buffer (the unprivileged maximum).

    Fewer wake-ups for a flooding child, and a short command's output fits while nobody reads
    yet. stdin keeps the default, so a child that stops reading blocks its writer as soon as
    it always did. Done once the request is out: the guard's spawn overlaps it.
    """
    with contextlib.suppress(OSError):
        fcntl.fcntl(read_fd, _F_SETPIPE_SZ, _PIPE_BYTES)


async def spawn_guarded(
    argv: Sequence[str],
    *,
    cwd: Path | None,
    env: Mapping[str, str] | None,
    stdin: str,
    stdout: str,
    stderr: str | int,
    abort_seconds: float,
) -> GuardedProcess:
    """Starts `argv` under a fresh guard; returns once the guard reported the leader's pid.

    The process belongs to its guard from the instant it exists: if this await is cancelled
    (or interrupted), the control socket is hung up, the guard SIGKILLs the tree, and this
    waits — shielded, at most `abort_seconds` — for the guard to confirm it before re-raising.

    Raises:
        GuardRefusedError: the guard could not start the command (nothing runs).
        OSError: the guard server could not be reached.
    """
    child_fds: list[int] = []
    host_fds: dict[str, int] = {}
    try:
        if stdin == "pipe":
            read_fd, host_fds["stdin"] = os.pipe()
            child_fds.append(read_fd)
        else:
            child_fds.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
        if stdout == "pipe":
            host_fds["stdout"], write_fd = os.pipe()
            child_fds.append(write_fd)
        else:
            child_fds.append(os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC))
        if stderr == "pipe":
            host_fds["stderr"], write_fd = os.pipe()
            child_fds.append(write_fd)
        elif stderr == "devnull":
            child_fds.append(os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC))
        elif stderr == "inherit":
            child_fds.append(os.dup(2))
        else:
            assert isinstance(stderr, int)
            child_fds.append(os.dup(stderr))
        header = {
            "argv": list(argv),
            # Always explicit: a reused guard keeps the directory of its previous run.
            "cwd": os.getcwd() if cwd is None else str(cwd),
        }
        environment = environment_text(dict(os.environ) if env is None else env)
        payload = json.dumps(header).encode() + b"\0" + environment
        if len(payload) <= _INLINE_REQUEST_BYTES:
            ours = _SERVER.send(b"R", payload, child_fds)
        else:
            memfd = os.memfd_create("subagent-spawn", os.MFD_CLOEXEC)
            try:
                os.write(memfd, payload)
                os.lseek(memfd, 0, os.SEEK_SET)
                ours = _SERVER.send(b"M", b"", [*child_fds, memfd])
            finally:
                os.close(memfd)
    except BaseException:
        for fd in host_fds.values():
            os.close(fd)
        raise
    finally:
        for fd in child_fds:
            os.close(fd)
    # Everything from here on overlaps the guard's spawn: the request is already out.
    for name in ("stdout", "stderr"):
        if name in host_fds:
            _enlarge(host_fds[name])
    link = _Link(ours)
    try:
        for listener in request_listeners:
            listener()
        if not await link.until(lambda: link.pid is not None or link.refused is not None):
            # A cancel requested while the guard was starting the command is delivered here,
            # even when the answer was already waiting: the abort below is the quickest end.
            await anyio.lowlevel.checkpoint_if_cancelled()
    except BaseException:
        # Cancelled or interrupted while the guard starts the command: it is already owned.
        link.hang_up()
        with anyio.move_on_after(abort_seconds, shield=True):
            await link.until(lambda: False)
        link.close()
        for fd in host_fds.values():
            os.close(fd)
        raise
    if link.pid is None:
        link.close()
        for fd in host_fds.values():
            os.close(fd)
        raise GuardRefusedError(link.refused or "os-error", link.refused_errno)
    return GuardedProcess(
        link,
        _PipeSendStream(host_fds["stdin"]) if "stdin" in host_fds else None,
        PipeReader(host_fds["stdout"]) if "stdout" in host_fds else None,
        PipeReader(host_fds["stderr"]) if "stderr" in host_fds else None,
    )
