"""`RayChannel`: one child on a node host, in the managed process's shape.

stdin, stdout and stderr are relays through the host's actor calls: a send is one awaited
call (so writes land in order), a receive pulls the next chunk (so a flooding child waits on
its pipe, and this side holds at most one chunk per stream). The guard's exit (its tree gone)
arrives as the answer to one waiting call. When the host is lost, every stream breaks
(`BrokenResourceError`) and the exit is never known: the provider sees a broken transport,
not a process exit, unless the guard had already reported one.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
from subagent_core.kit import ChildChannel

from ._driver import Host, HostLostError

READ_AHEAD = 4
"""Pulls kept in flight per output stream: the driver holds at most this many chunks."""


class _RelaySend(anyio.abc.ByteSendStream):
    """The child's stdin, through the host (the host holds the only write end)."""

    def __init__(self, channel: RayChannel) -> None:
        self._channel = channel
        self._lock = anyio.Lock()
        self._closed = False

    async def send(self, item: bytes) -> None:
        async with self._lock:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                written = await self._channel.host.call("write", self._channel.child_id, item)
            except HostLostError:
                self._channel.lost = True
                raise anyio.BrokenResourceError from None
            if not written:
                raise anyio.BrokenResourceError

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._channel.host.fire("close_stdin", self._channel.child_id)
        await anyio.lowlevel.checkpoint()


class _RelayReceive(anyio.abc.ByteReceiveStream):
    """One output stream of the child, pulled from the host a chunk at a time.

    `READ_AHEAD` pulls are kept in flight, each naming its chunk, so a round trip overlaps
    the next chunks whatever order the host runs them in.
    """

    def __init__(self, channel: RayChannel, stream: str) -> None:
        self._channel = channel
        self._stream = stream
        self._pending: deque[Any] = deque()
        self._held = b""
        self._ended = False
        self._asked_all = False
        self._closed = False
        self._next = 0
        """The number of the next chunk to ask for."""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        host = self._channel.host
        while not self._held:
            if self._ended:
                raise anyio.EndOfStream
            try:
                while not self._asked_all and len(self._pending) < READ_AHEAD:
                    number = self._next
                    self._next += 1
                    self._pending.append(
                        host.submit("read", self._channel.child_id, self._stream, number)
                    )
                chunk: bytes = await host.answer(self._pending[0])
            except HostLostError:
                self._channel.lost = True
                raise anyio.BrokenResourceError from None
            self._pending.popleft()
            if self._closed:
                raise anyio.ClosedResourceError
            if not chunk:
                self._ended = self._asked_all = True
                self._pending.clear()
            self._held = chunk
        chunk, self._held = self._held[:max_bytes], self._held[max_bytes:]
        return chunk

    def close(self) -> None:
        self._closed = True
        self._held = b""
        self._pending.clear()

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()


class RayChannel(ChildChannel):
    """A child started by a node host; `pid` is its guard's pid on that node (for logs)."""

    def __init__(self, host: Host, child_id: str, guard_pid: int, *, stderr: bool) -> None:
        self.host = host
        self.child_id = child_id
        self._pid = guard_pid
        self.lost = False
        self._code: int | None = None
        self._ended = False
        self._wait = host.actor.wait.remote(child_id)
        self._stdin: _RelaySend | None = _RelaySend(self)
        self._stdout = _RelayReceive(self, "stdout")
        self._stderr = _RelayReceive(self, "stderr") if stderr else None
        self._released = False

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def returncode(self) -> int | None:
        return self._code if self._ended else None

    @property
    def stdin(self) -> anyio.abc.ByteSendStream | None:
        return self._stdin

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream | None:
        return self._stdout

    @property
    def stderr(self) -> anyio.abc.ByteReceiveStream | None:
        return self._stderr

    async def _await_end(self) -> None:
        if self._ended or self.lost:
            return
        try:
            code: int | None = await self._wait
        except Exception:
            # Ray's failures only: the host or its node is gone.
            self.lost = True
            return
        self._code = code
        self._ended = True

    @property
    def exit_known(self) -> bool:
        return self._ended

    async def wait_exit(self) -> int | None:
        """The guard's exit code (the leader's, once its tree is gone); a lost host never
        answers, so this then waits until cancelled (the streams' break tells the provider)."""
        await self._await_end()
        if not self._ended:
            await anyio.sleep_forever()
        return self._code

    def tree_gone(self) -> bool:
        return self._ended

    async def wait_tree_gone(self) -> bool:
        await self._await_end()
        return self._ended

    def signal_tree(self, step: str) -> None:
        self.host.fire("signal", self.child_id)

    def send_signal(self, signal: int) -> None:
        """The guard takes no per-signal orders over the relay: any signal ends the tree."""
        self.host.fire("signal", self.child_id)

    def terminate(self) -> None:
        self.send_signal(15)  # SIGTERM

    def kill(self) -> None:
        self.send_signal(9)  # SIGKILL

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        self._stdout.close()
        if self._stderr is not None:
            self._stderr.close()
        self.host.fire("release", self.child_id)
