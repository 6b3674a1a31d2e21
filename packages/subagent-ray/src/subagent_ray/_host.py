"""The node host: one Ray actor per node that starts, relays and ends that node's children.

It runs inside a Ray worker on the node (asyncio: Ray drives async actors on its own loop) and
starts each child exactly as a local owner does, with `open_managed_process`: the host's guard
server hands the spawn to a guard forked in advance, so a start costs one message and a
`posix_spawn`, not an interpreter. Ray's cleanup of this worker cannot orphan a tree:

- each guard is a child subreaper in the guard server's own session, never this worker's
  child or in its process group (which Ray SIGKILLs when it ends the worker);
- this worker holds the only end of each guard's control socket, and the kernel closes it
  when the worker dies for any reason: the guard then SIGKILLs its tree and exits.

Three ways the host ends on its own:

- the driver's lease (renewed every few seconds) expires: the driver is gone or cut off;
- its parent (the node's raylet) exits: a pidfd on it turns readable (a raylet SIGKILLed
  leaves its workers running otherwise);
- Ray kills it (owner death, `ray.kill`, node removal).
Each of these ends this process, so every guard loses its owner and kills its tree.

Relays are pulls: the driver asks for the next chunk of a stream and a few chunks per stream
are read ahead, so a flooding child is held by its pipe, never buffered here without bound.
stdin writes are numbered by the driver and applied here in that order, however Ray runs them.
"""

from __future__ import annotations

import sys

if sys.platform == "win32":  # pragma: no cover - node hosts run on Linux only
    raise ImportError("the Ray node host runs on Linux only")

import asyncio
import contextlib
import os
import shutil
import signal
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Literal

import anyio
import anyio.abc
from subagent_core.kit import ManagedProcess, SpawnError, open_managed_process

READ_CHUNK_BYTES = 96 * 1024
"""The most one relayed read returns. Under Ray's 100 KiB limit for answers carried inline in
the reply: a larger answer goes through the node's object store, which here halved the
relay's rate."""
READ_AHEAD_CHUNKS = 8
"""Chunks a stream reads ahead of the driver's pulls."""
_WARM_REAP_SECONDS = 3.0
"""Bounds the wait for the warm-up child's tree to go (the local kill grace default)."""
_EOF = b""


class _Pump:
    """Reads one output stream ahead by a few chunks (the relay's backpressure).

    Chunks are numbered: a driver keeps several pulls in flight and Ray may run an async
    actor's calls out of order, so each pull names the chunk it wants.
    """

    def __init__(self, stream: anyio.abc.ByteReceiveStream) -> None:
        self.stream = stream
        self.chunks: dict[int, bytes] = {}
        self.produced = 0
        self.end: int | None = None
        """The number of the first chunk past the end, once the stream ended."""
        self.changed = asyncio.Condition()
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            while True:
                async with self.changed:
                    await self.changed.wait_for(lambda: len(self.chunks) < READ_AHEAD_CHUNKS)
                try:
                    chunk = await self.stream.receive(READ_CHUNK_BYTES)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
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
    """One child on this host: its process, its relays, and the order of its stdin writes."""

    managed: ManagedProcess
    pumps: dict[str, _Pump]
    stdin_broken: bool = False
    written: int = 0
    """stdin writes applied (or failed) so far, in the driver's numbering."""
    finished: bool = False
    """The owner is done: nothing waits for a turn any more."""
    order: asyncio.Condition = field(default_factory=asyncio.Condition)
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    """The driver closed stdin or let the child go: the node's ladder starts."""
    released: asyncio.Event = field(default_factory=asyncio.Event)
    """The driver let the child go: once the ladder is done, its pipes and guard are released."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """The tree is gone, or can no longer be watched (its guard was killed, or released)."""

    async def turn(self, number: int) -> bool:
        """Waits until every write numbered below `number` was applied; False once the
        owner is done."""
        async with self.order:
            await self.order.wait_for(lambda: self.written >= number or self.finished)
        return not self.finished

    async def advance(self) -> None:
        async with self.order:
            self.written += 1
            self.order.notify_all()

    async def finish(self) -> None:
        async with self.order:
            self.finished = True
            self.order.notify_all()


def _answer(future: asyncio.Future[int | str], value: int | str) -> None:
    if not future.done():
        future.set_result(value)


class NodeHost:
    """The actor body (wrapped with `ray.remote` by the driver; see `_driver`)."""

    def __init__(self, lease_seconds: float) -> None:
        self._lease_seconds = lease_seconds
        self._renewed = time.monotonic()
        self._children: dict[str, _Child] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[None]] = set()
        """Tasks this host keeps: one per child, owning its `open_managed_process` block, and
        each wait to close a child's stdin after its writes."""
        self._abandoned: set[str] = set()
        """Children the driver gave up on before their start finished."""

    # -- life ------------------------------------------------------------------------------

    async def start(self) -> tuple[str, int]:
        """Starts the watchdogs and the guards; returns this node's Ray id and this pid."""
        import ray

        if not self._tasks:
            loop = asyncio.get_running_loop()
            self._tasks.append(loop.create_task(self._watch_lease()))
            self._watch_parent(loop)
            await self._warm()
        return ray.get_runtime_context().get_node_id(), os.getpid()

    async def _warm(self) -> None:
        """Runs one empty child, so the first real start finds the guard server up and an
        idle guard forked, as every later start does."""
        true = shutil.which("true", path=os.defpath)
        if true is None:
            return
        with contextlib.suppress(SpawnError):
            async with open_managed_process(
                [true], cwd="/", env={}, stdin="devnull", stdout="devnull", stderr="devnull"
            ) as managed:
                with anyio.move_on_after(_WARM_REAP_SECONDS):
                    await managed.wait_tree_gone()

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
        """Ends this host: the kernel closes every guard's control socket, and each guard
        SIGKILLs its tree."""
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
        kill_grace: float,
    ) -> int | str:
        """Starts one child under the driver's `child_id`; its leader's pid, or a closed
        refusal reason (`SpawnError`'s).

        The node's ladder waits `eof_grace` and `term_grace` (the placement's node graces),
        then up to `kill_grace` (the caller's, as for a local child) for the SIGKILLed tree.
        """
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[int | str] = loop.create_future()
        graces = (eof_grace, term_grace, kill_grace)
        self._keep(self._own(child_id, argv, env, cwd, stderr == "pipe", graces, answer))
        # Shielded: a cancelled call leaves the child to its owner task (and the driver's
        # release), never half-started.
        return await asyncio.shield(answer)

    def _keep(self, work: Coroutine[object, object, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _own(
        self,
        child_id: str,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        relay_stderr: bool,
        graces: tuple[float, float, float],
        answer: asyncio.Future[int | str],
    ) -> None:
        """Owns one child from its start until the driver let it go and its ladder is done."""
        eof_grace, term_grace, kill_grace = graces
        try:
            async with open_managed_process(
                argv,
                cwd=cwd,
                env=env,
                stdin="pipe",
                stdout="pipe",
                stderr="pipe" if relay_stderr else "devnull",
                eof_grace_seconds=eof_grace,
                term_grace_seconds=term_grace,
                kill_grace_seconds=kill_grace,
            ) as managed:
                if child_id in self._abandoned:
                    self._abandoned.discard(child_id)
                    _answer(answer, "os-error")
                    return  # leaving the block ends the tree
                assert managed.stdout is not None
                pumps = {"stdout": _Pump(managed.stdout)}
                if managed.stderr is not None:
                    pumps["stderr"] = _Pump(managed.stderr)
                child = self._children[child_id] = _Child(managed, pumps)
                _answer(answer, managed.pid)
                watch = asyncio.get_running_loop().create_task(self._watch_tree(child))
                try:
                    await child.closing.wait()
                    await managed.terminate(eof_grace, term_grace, kill_grace)
                    await child.released.wait()
                finally:
                    watch.cancel()
                    await child.finish()
                    child.ended.set()
                    for pump in pumps.values():
                        pump.close()
                    if self._children.get(child_id) is child:
                        del self._children[child_id]
        except SpawnError as error:
            _answer(answer, error.reason)
        except Exception:
            _answer(answer, "os-error")

    async def _watch_tree(self, child: _Child) -> None:
        await child.managed.wait_tree_gone()
        child.ended.set()

    async def write(self, child_id: str, number: int, data: bytes) -> bool:
        """Writes all of `data` to the child's stdin as write `number` (from 0), after every
        earlier one; False when its stdin is closed or broken."""
        child = self._children.get(child_id)
        if child is None or not await child.turn(number):
            return False
        stdin = child.managed.stdin
        written = False
        if stdin is not None and not (child.closing.is_set() or child.stdin_broken):
            try:
                await stdin.send(data)
                written = True
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                child.stdin_broken = True
        await child.advance()
        return written

    async def read(self, child_id: str, stream: str, number: int) -> bytes:
        """Chunk `number` (from 0) of `stream` (`stdout`/`stderr`); `b""` past its end."""
        child = self._children.get(child_id)
        pump = None if child is None else child.pumps.get(stream)
        return _EOF if pump is None else await pump.read(number)

    def close_stdin(self, child_id: str, writes: int) -> None:
        """EOF for the child once its first `writes` writes have landed, then the node's
        ladder (EOF grace, SIGTERM, TERM grace, SIGKILL)."""
        child = self._children.get(child_id)
        if child is not None:
            self._keep(self._close_after(child, writes))

    async def _close_after(self, child: _Child, writes: int) -> None:
        # A write stuck on a child that never reads holds the EOF back; the driver's ladder
        # then signals the tree, and the write fails once it is gone.
        await child.turn(writes)
        child.closing.set()

    async def wait(self, child_id: str) -> int | None:
        """Waits until the tree is gone; the leader's returncode when its guard reported it."""
        child = self._children.get(child_id)
        if child is None:
            return None
        await child.ended.wait()
        return child.managed.raw.returncode

    def signal(self, child_id: str, step: Literal["term", "kill"]) -> None:
        """One step of the driver's ladder: SIGTERM or SIGKILL to every member of the tree."""
        child = self._children.get(child_id)
        if child is not None and step in ("term", "kill") and not child.ended.is_set():
            child.managed.signal_tree(step)

    def signal_leader(self, child_id: str, number: int) -> None:
        """Signal `number` to the leader alone (`send_signal`)."""
        child = self._children.get(child_id)
        if child is not None and not child.ended.is_set():
            with contextlib.suppress(ValueError):
                child.managed.send_signal(signal.Signals(number))

    def release(self, child_id: str) -> None:
        """Done with a child: its ladder runs (a no-op once the tree is gone), then its pipes
        and guard are released and its state is dropped."""
        child = self._children.pop(child_id, None)
        if child is None:
            self._abandoned.add(child_id)  # its start is still under way
            return
        child.closing.set()
        child.released.set()

    def children(self) -> int:
        """How many children this host holds (tests and benchmarks)."""
        return len(self._children)
