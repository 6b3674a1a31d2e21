"""`RayChannel`: one child on a node host, in the managed process's shape.

stdin, stdout and stderr are relays through the host's actor calls: a send is one numbered
call that a few others may overtake on the wire but never on the pipe (the host applies them
in order), a receive pulls the next chunk (so a flooding child waits on its pipe, and this side
holds at most a few chunks per stream). The end of the tree, with the
leader's returncode, arrives as the answer to one waiting call. When the host is lost, every stream breaks
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

READ_AHEAD = 8
"""Pulls kept in flight per output stream once it streams: the driver holds at most this many
chunks."""
STREAMING_CHUNK_BYTES = 64 * 1024
"""A chunk this large shows a stream that floods: from then on `READ_AHEAD` pulls overlap.
Until then one pull is in flight: a message protocol's frames are small, and each pull sent
ahead costs the driver and the host CPU that the child's own start competes for."""


UNACKED_WRITES = 16
"""stdin writes sent ahead of their acknowledgements (with `UNACKED_BYTES`, the relay's
backpressure on a writer whose child does not read)."""
UNACKED_BYTES = 1 << 20
"""stdin bytes sent ahead of their acknowledgements."""


class _RelaySend(anyio.abc.ByteSendStream):
    """The child's stdin, through the host (the host holds the only write end).

    A send does not wait for its write to land: an acknowledgement costs a round trip, and a
    protocol client that waits for it before reading its answer pays that trip on every
    request. Each write carries its number and the host applies them in that order; up to
    `UNACKED_WRITES` writes or `UNACKED_BYTES` bytes go ahead of their acknowledgements, then a
    send waits for the oldest. So a stdin that broke (the child closed it, or exited) shows
    at a later send, as it would behind a pipe's own buffer.
    """

    def __init__(self, channel: RayChannel) -> None:
        self._channel = channel
        self._lock = anyio.Lock()
        self._closed = False
        self._broken = False
        self._sent = 0
        """Writes sent so far (the number of the next one)."""
        self._unacked: deque[tuple[Any, int]] = deque()
        self._unacked_bytes = 0

    async def send(self, item: bytes) -> None:
        async with self._lock:
            if self._closed:
                raise anyio.ClosedResourceError
            while not self._broken and (
                len(self._unacked) >= UNACKED_WRITES
                or (self._unacked and self._unacked_bytes + len(item) > UNACKED_BYTES)
            ):
                await self._settle_oldest()
            if self._closed:
                raise anyio.ClosedResourceError  # closed while this send waited
            if self._broken:
                raise anyio.BrokenResourceError
            try:
                ref = self._channel.host.submit("write", self._channel.child_id, self._sent, item)
            except HostLostError:
                self._channel.lost = True
                self._broken = True
                raise anyio.BrokenResourceError from None
            self._sent += 1
            self._unacked.append((ref, len(item)))
            self._unacked_bytes += len(item)

    async def _settle_oldest(self) -> None:
        # Dropped from the count only once answered: a send cancelled while it waits here
        # leaves the bound as it was.
        ref, size = self._unacked[0]
        try:
            written: bool = await self._channel.host.answer(ref)
        except HostLostError:
            self._channel.lost = True
            written = False
        if self._unacked and self._unacked[0][0] is ref:  # `aclose` may have cleared them
            self._unacked.popleft()
            self._unacked_bytes -= size
        if not written:
            self._broken = True

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._unacked.clear()
            self._unacked_bytes = 0
            # After the writes sent so far: the host closes stdin once they have landed.
            self._channel.host.fire("close_stdin", self._channel.child_id, self._sent)
        await anyio.lowlevel.checkpoint()


class _RelayReceive(anyio.abc.ByteReceiveStream):
    """One output stream of the child, pulled from the host a chunk at a time.

    One pull is in flight while the chunks are small; once one is large (a flood), `READ_AHEAD`
    pulls are, each naming its chunk, so a round trip overlaps the next chunks whatever order
    the host runs them in.
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
        self._ahead = 1
        """Pulls to keep in flight: 1, then `READ_AHEAD` once the stream floods."""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        host = self._channel.host
        while not self._held:
            if self._ended:
                raise anyio.EndOfStream
            try:
                self._ask()
                chunk: bytes = await host.answer(self._pending[0])
            except HostLostError:
                self._channel.lost = True
                raise anyio.BrokenResourceError from None
            self._pending.popleft()
            if len(chunk) >= STREAMING_CHUNK_BYTES:
                self._ahead = READ_AHEAD
            if self._closed:
                raise anyio.ClosedResourceError
            if not chunk:
                self._ended = self._asked_all = True
                self._pending.clear()
            else:
                self.prefetch()
            self._held = chunk
        chunk, self._held = self._held[:max_bytes], self._held[max_bytes:]
        return chunk

    def _ask(self) -> None:
        """Keeps `_ahead` pulls in flight (`HostLostError` when the host is gone)."""
        while not self._asked_all and len(self._pending) < self._ahead:
            number = self._next
            self._next += 1
            self._pending.append(
                self._channel.host.submit("read", self._channel.child_id, self._stream, number)
            )

    def prefetch(self) -> None:
        """Sends the next pulls at once, so one is on its way while this chunk is consumed."""
        try:
            self._ask()
        except HostLostError:
            self._channel.lost = True

    def close(self) -> None:
        self._closed = True
        self._held = b""
        self._pending.clear()

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()


class RayChannel(ChildChannel):
    """A child started by a node host; `pid` is its leader's pid on that node (for logs)."""

    def __init__(self, host: Host, child_id: str, leader_pid: int, *, stderr: bool) -> None:
        self.host = host
        self.child_id = child_id
        self._pid = leader_pid
        self.lost = False
        self._code: int | None = None
        self._ended = False
        self._wait = host.actor.wait.remote(child_id)
        self._stdin: _RelaySend | None = _RelaySend(self)
        self._stdout = _RelayReceive(self, "stdout")
        self._stderr = _RelayReceive(self, "stderr") if stderr else None
        self._released = False
        self._stdout.prefetch()  # the first output is on its way before anyone asks for it

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
        """The leader's returncode, once its whole tree is gone; a lost host never
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
        self.host.fire("signal", self.child_id, step)

    def send_signal(self, signal: int) -> None:
        """Signals the leader alone (as `anyio.abc.Process` does)."""
        self.host.fire("signal_leader", self.child_id, int(signal))

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
