"""The node host: one Ray actor per node that starts, relays and ends that node's children.

It runs inside a Ray worker on the node (asyncio: Ray drives async actors on its own loop).
Each child is started through the detached launcher (`_launch`), so Ray's cleanup of this
worker never orphans a tree: the host holds the only write end of each guard's stdin, and the
kernel closes it when this process dies for any reason. Three ways it ends on its own:

- the driver's lease (renewed every few seconds) expires: the driver is gone or cut off;
- its parent (the node's raylet) exits: a pidfd on it turns readable (a raylet SIGKILLed
  leaves its workers running otherwise);
- Ray kills it (owner death, `ray.kill`, node removal).
Each of these ends this process, so every guard sees EOF and kills its tree.

Relays are pulls: the driver asks for the next chunk of a stream and one chunk per stream is
read ahead, so a flooding child is held by its pipe, never buffered here. stdin writes are
awaited one at a time by the driver, in order.
"""

from __future__ import annotations

import sys

if sys.platform == "win32":  # pragma: no cover - node hosts run on Linux only
    raise ImportError("the Ray node host runs on Linux only")

import asyncio
import contextlib
import errno
import fcntl
import importlib.resources
import os
import shutil
import signal
import time
from dataclasses import dataclass, field

from ._launch import launcher_argv

READ_CHUNK_BYTES = 512 * 1024
"""The most one relayed read returns: larger chunks cost fewer round trips, more memory."""
READ_AHEAD_CHUNKS = 4
"""Chunks a stream reads ahead of the driver's pulls."""
_PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031
_EOF = b""


def _guard_path() -> str:
    return str(importlib.resources.files("subagent_core").joinpath("guard.py"))


def _readable(fd: int) -> asyncio.Future[None]:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        loop.remove_reader(fd)
        if not future.done():
            future.set_result(None)

    loop.add_reader(fd, ready)
    future.add_done_callback(lambda _: loop.remove_reader(fd))
    return future


def _writable(fd: int) -> asyncio.Future[None]:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        loop.remove_writer(fd)
        if not future.done():
            future.set_result(None)

    loop.add_writer(fd, ready)
    future.add_done_callback(lambda _: loop.remove_writer(fd))
    return future


def _close(fd: int) -> None:
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)


def _refusal(argv: list[str], env: dict[str, str], cwd: str) -> str | None:
    """What refuses the command on this node before anything starts (a closed reason)."""
    if not os.path.isdir(cwd):
        return "bad-cwd"
    program = argv[0]
    if os.sep not in program:
        if shutil.which(program, path=env.get("PATH", os.defpath)) is None:
            return "not-found"
    elif not os.path.exists(program):
        return "not-found"
    elif not os.access(program, os.X_OK):
        return "not-executable"
    return None


def _start(
    argv: list[str], env: dict[str, str], cwd: str, stderr: str, eof_grace: float, term_grace: float
) -> tuple[int, int, int, int, int] | str:
    """Starts the launcher; (its pid, stdin write end, stdout, stderr or -1, status read end).

    Every other end is closed here: the launcher's watcher and the guard hold theirs.
    """
    refused = _refusal(argv, env, cwd)
    if refused is not None:
        return refused
    fds: list[int] = []
    try:
        stdin_r, stdin_w = os.pipe()
        out_r, out_w = os.pipe()
        status_r, status_w = os.pipe()
        fds += [stdin_r, stdin_w, out_r, out_w, status_r, status_w]
        with contextlib.suppress(OSError):
            fcntl.fcntl(out_r, _F_SETPIPE_SZ, _PIPE_BYTES)
        if stderr == "pipe":
            err_r, err_w = os.pipe()
            fds += [err_r, err_w]
        else:
            err_r, err_w = -1, os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
            fds.append(err_w)
        actions = [
            (os.POSIX_SPAWN_DUP2, stdin_r, 0),
            (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2),
            (os.POSIX_SPAWN_DUP2, status_w, 3),
        ]
        launcher = os.posix_spawn(
            sys.executable,
            launcher_argv(sys.executable, cwd, _guard_path(), argv, eof_grace, term_grace),
            env,
            file_actions=actions,
            setsid=True,
            setsigdef=(signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGHUP),
        )
    except OSError as error:
        for fd in fds:
            _close(fd)
        return "not-executable" if error.errno in (errno.EACCES, errno.EPERM) else "os-error"
    for fd in (stdin_r, out_w, err_w, status_w):
        _close(fd)
    return launcher, stdin_w, out_r, err_r, status_r


class _Pump:
    """Reads one output pipe ahead by a few chunks (the relay's backpressure).

    Chunks are numbered: a driver keeps several pulls in flight and Ray may run an async
    actor's calls out of order, so each pull names the chunk it wants.
    """

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd = fd
        self.chunks: dict[int, bytes] = {}
        self.produced = 0
        self.end: int | None = None
        """The number of the first chunk past the end, once the pipe ended."""
        self.changed = asyncio.Condition()
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            while True:
                async with self.changed:
                    await self.changed.wait_for(lambda: len(self.chunks) < READ_AHEAD_CHUNKS)
                try:
                    chunk = os.read(self.fd, READ_CHUNK_BYTES)
                except BlockingIOError:
                    await _readable(self.fd)
                    continue
                except OSError:
                    chunk = _EOF
                async with self.changed:
                    if chunk:
                        self.chunks[self.produced] = chunk
                        self.produced += 1
                    else:
                        self.end = self.produced
                    self.changed.notify_all()
                if not chunk:
                    return
        finally:
            _close(self.fd)
            self.fd = -1
            if self.end is None:
                async with self.changed:
                    self.end = self.produced
                    self.changed.notify_all()

    async def read(self, number: int) -> bytes:
        async with self.changed:
            await self.changed.wait_for(
                lambda: number in self.chunks or (self.end is not None and number >= self.end)
            )
            chunk = self.chunks.pop(number, _EOF)
            self.changed.notify_all()
        return chunk

    def close(self) -> None:
        self.task.cancel()


@dataclass
class _Child:
    stdin: int
    status: int
    pumps: dict[str, _Pump]
    guard_pid: int | None = None
    guard_fd: int = -1
    exit_code: int | None = None
    started: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the guard's pid is known, or the watcher ended without one."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class NodeHost:
    """The actor body (wrapped with `ray.remote` by the driver; see `_driver`)."""

    def __init__(self, lease_seconds: float) -> None:
        self._lease_seconds = lease_seconds
        self._renewed = time.monotonic()
        self._children: dict[str, _Child] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._abandoned: set[str] = set()
        """Children the driver gave up on before their start finished."""
        self._watchers: set[asyncio.Task[None] | None] = set()
        """Kept here so a released child's watcher runs on until its guard exits."""

    # -- life ------------------------------------------------------------------------------

    async def start(self) -> tuple[str, int]:
        """Starts the watchdogs; returns this node's Ray id and this worker's pid."""
        import ray

        if not self._tasks:
            loop = asyncio.get_running_loop()
            self._tasks.append(loop.create_task(self._watch_lease()))
            self._watch_parent(loop)
        return ray.get_runtime_context().get_node_id(), os.getpid()

    def renew(self) -> None:
        """The driver's lease: every call pushes the expiry `lease_seconds` out."""
        self._renewed = time.monotonic()

    async def _watch_lease(self) -> None:
        while True:
            left = self._renewed + self._lease_seconds - time.monotonic()
            if left <= 0:
                self._end()
            await asyncio.sleep(min(left, 1.0))

    def _watch_parent(self, loop: asyncio.AbstractEventLoop) -> None:
        parent = os.getppid()
        try:
            fd = os.pidfd_open(parent)
        except OSError:
            fd = -1
        if fd < 0 or parent == 1:
            self._end()  # the raylet is already gone
        loop.add_reader(fd, self._end)

    def _end(self) -> None:
        """Ends this host: the kernel closes every guard's stdin, and each kills its tree."""
        for child in self._children.values():
            _close(child.stdin)
        os._exit(0)

    # -- children --------------------------------------------------------------------------

    async def spawn(
        self,
        child_id: str,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        stderr: str,
        eof_grace: float,
        term_grace: float,
    ) -> int | str:
        """Starts one child under the driver's `child_id`; its guard's pid, or a closed
        refusal reason."""
        started = _start(argv, env, cwd, stderr, eof_grace, term_grace)
        if isinstance(started, str):
            return started
        launcher, stdin_w, out_r, err_r, status_r = started
        # The launcher exits as soon as it has forked; reap it without blocking the loop.
        await asyncio.get_running_loop().run_in_executor(None, os.waitpid, launcher, 0)
        os.set_blocking(stdin_w, False)
        os.set_blocking(status_r, False)
        pumps = {"stdout": _Pump(out_r)}
        if err_r >= 0:
            pumps["stderr"] = _Pump(err_r)
        child = _Child(stdin_w, status_r, pumps)
        self._children[child_id] = child
        if child_id in self._abandoned:
            self._abandoned.discard(child_id)
            await self.release(child_id)
            return "os-error"
        watcher = asyncio.get_running_loop().create_task(self._watch(child))
        self._watchers.add(watcher)
        pid = await self._status_pid(child)
        if pid is None:
            await self.release(child_id)
            return "os-error"
        return pid

    async def _status_pid(self, child: _Child) -> int | None:
        await child.started.wait()
        return child.guard_pid

    async def _watch(self, child: _Child) -> None:
        """Applies the watcher's status lines; the guard's pidfd covers a watcher that died."""
        buffer = b""
        task = asyncio.current_task()
        try:
            while True:
                try:
                    data = os.read(child.status, 256)
                except BlockingIOError:
                    await _readable(child.status)
                    continue
                except OSError:
                    data = b""
                if not data:
                    break
                buffer += data
                while b"\n" in buffer:
                    line, _, buffer = buffer.partition(b"\n")
                    kind, _, value = line.decode("ascii", "replace").partition(" ")
                    if kind == "pid" and value.isdigit():
                        child.guard_pid = int(value)
                        with contextlib.suppress(OSError):
                            child.guard_fd = os.pidfd_open(child.guard_pid)
                        child.started.set()
                    elif kind == "exit":
                        with contextlib.suppress(ValueError):
                            child.exit_code = int(value)
            if child.exit_code is None and child.guard_fd >= 0:
                await _readable(child.guard_fd)
        finally:
            _close(child.status)
            _close(child.guard_fd)
            child.guard_fd = -1
            child.started.set()
            child.ended.set()
            self._watchers.discard(task)

    async def write(self, child_id: str, data: bytes) -> bool:
        """Writes all of `data` to the child's stdin; False when its stdin is closed."""
        child = self._children.get(child_id)
        if child is None:
            return False
        async with child.write_lock:
            view = memoryview(data)
            while view:
                if child.stdin < 0:
                    return False
                try:
                    view = view[os.write(child.stdin, view) :]
                except BlockingIOError:
                    await _writable(child.stdin)
                except OSError:
                    return False
        return True

    async def read(self, child_id: str, stream: str, number: int) -> bytes:
        """Chunk `number` (from 0) of `stream` (`stdout`/`stderr`); `b""` past its end."""
        child = self._children.get(child_id)
        pump = None if child is None else child.pumps.get(stream)
        return _EOF if pump is None else await pump.read(number)

    def close_stdin(self, child_id: str) -> None:
        """EOF for the guard: it closes the agent's stdin and starts its ladder."""
        child = self._children.get(child_id)
        if child is not None:
            _close(child.stdin)
            child.stdin = -1

    async def wait(self, child_id: str) -> int | None:
        """Waits until the guard exited (its tree is gone); its exit code when reported."""
        child = self._children.get(child_id)
        if child is None:
            return None
        await child.ended.wait()
        return child.exit_code

    def signal(self, child_id: str) -> None:
        """`term`/`kill` for the tree: SIGTERM makes the guard SIGKILL its tree at once."""
        child = self._children.get(child_id)
        if child is not None and child.guard_fd >= 0 and not child.ended.is_set():
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(child.guard_fd, signal.SIGTERM)

    async def release(self, child_id: str) -> None:
        """Done with a child: our ends close (its guard kills what is left), state is dropped."""
        child = self._children.pop(child_id, None)
        if child is None:
            self._abandoned.add(child_id)  # its start is still under way, or never came
            return
        _close(child.stdin)
        child.stdin = -1
        for pump in child.pumps.values():
            pump.close()
        # The watcher keeps running until the guard exits, so its pidfd and pipe are closed.

    def children(self) -> int:
        """How many children this host holds (tests and benchmarks)."""
        return len(self._children)
