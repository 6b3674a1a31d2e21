"""Linux containment: every managed process is started by a guard that owns its whole tree.

The guard (`subagent_core.guard`) is a child subreaper, so a `setsid` sleeper, a double-forked
daemon or a process that cleared its environment still re-parents to it, never to PID 1. Guards
come from one guard server per host process, started on first use with `python -I -S`; it
forks an idle guard ahead of need and hands its socket to us, so a spawn costs one message to
a running guard and a `posix_spawn`, not an interpreter start or a fork. Each run talks to its own guard over a control
socket (`SOCK_SEQPACKET`): `pid N` / `error REASON`, then `exit RC` and `gone` arrive as
messages, so waiting needs no thread, no poll and no `/proc` scan. Closing the socket — or the
death of this process by any signal — makes the guard SIGKILL the tree. The server and the
hand-over of guards live in `_guard_server`; this module is one run: its link, pipes, process.
"""

from __future__ import annotations

import sys

if sys.platform == "win32":  # pragma: no cover - Windows contains trees with Job Objects
    raise ImportError("guarded spawns are POSIX only")

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import socket
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import anyio
import anyio.abc
import anyio.lowlevel

from ._guard_server import guard_server
from ._pipe_reader import PipeReader

# Test seam: called (synchronously) right after a spawn request went to the guard server and
# before its answer is awaited — the window in which a cancel must not leak the new process.
request_listeners: list[Callable[[], None]] = []

_INLINE_REQUEST_BYTES = 60_000
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
        if reusable and guard_server().recycle(self.sock):
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
            ours = guard_server().send(b"R", payload, child_fds)
        else:
            memfd = os.memfd_create("subagent-spawn", os.MFD_CLOEXEC)
            try:
                os.write(memfd, payload)
                os.lseek(memfd, 0, os.SEEK_SET)
                ours = guard_server().send(b"M", b"", [*child_fds, memfd])
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
