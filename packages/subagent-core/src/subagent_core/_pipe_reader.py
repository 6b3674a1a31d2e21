"""Our read end of a child's pipe on the asyncio loop, registered with the loop once.

`anyio.wait_readable` adds and removes the descriptor around every wait, and a read that finds
the pipe empty is a system call of its own: for a line protocol that is, per frame, a failed
read, two `epoll_ctl` calls and one more pass of the loop before the frame is handled. Here the
loop's readiness callback reads as data arrives, into a buffer of at most `BUFFER_LIMIT` bytes
(reading pauses while that much waits unread, so a flood costs bounded memory and the pipe
pushes back on the child), and `receive()` hands out what is buffered.

Every `receive()` is still a schedule point: it either waited for data or yields once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import sys
from collections.abc import Callable
from typing import Final

import anyio
import anyio.abc
import anyio.lowlevel

READ_BYTES: Final = 256 * 1024
"""Most bytes one readiness callback reads."""

BUFFER_LIMIT: Final = 1024 * 1024
"""Reading pauses while this many bytes wait unread (the buffer's bound, plus one read)."""

DRAIN_LIMIT: Final = 4 * 1024 * 1024
"""Most bytes `drain_ended` reads in one call: more than two full 1 MiB pipes."""


class PipeReader(anyio.abc.ByteReceiveStream):
    """A non-blocking pipe read end; `close()` releases it at once, waking a waiting reader."""

    def __init__(self, fd: int) -> None:
        if sys.platform != "win32":  # guarded children's pipes exist on POSIX only
            os.set_blocking(fd, False)
        self._fd = fd
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._eof = False
        self._error: OSError | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """Set while the descriptor is registered for reading."""
        self._waiter: asyncio.Future[None] | None = None

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint_if_cancelled()
        waited = False
        while not self._chunks:
            self._raise_if_ended()
            self._register()
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
            waited = True
        data = self._take(max_bytes)
        if not waited:
            await anyio.lowlevel.cancel_shielded_checkpoint()
        return data

    def receive_nowait(self, max_bytes: int = 65536) -> bytes:
        """What is buffered or readable right now, without waiting or yielding.

        Raises:
            anyio.WouldBlock: nothing is available yet.
            anyio.EndOfStream: every writer is gone and everything was read.
            anyio.ClosedResourceError: this end was closed.
            anyio.BrokenResourceError: the read failed.
        """
        if not self._chunks:
            self._on_readable()
            if not self._chunks:
                self._raise_if_ended()
                raise anyio.WouldBlock
        return self._take(max_bytes)

    def _raise_if_ended(self) -> None:
        """With nothing buffered: raises what ended the stream, if anything did."""
        if self._fd < 0:
            raise anyio.ClosedResourceError
        if self._error is not None:
            raise anyio.BrokenResourceError from self._error
        if self._eof:
            raise anyio.EndOfStream

    def close(self) -> None:
        """Unregisters and closes the descriptor now; a waiting `receive()` raises
        `ClosedResourceError`."""
        self._unregister()
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
        self._chunks.clear()
        self._buffered = 0
        self._wake()

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()

    def _take(self, max_bytes: int) -> bytes:
        """Up to `max_bytes` of what is buffered. After a short read, what follows is joined
        while it fits, so a writer's many small writes reach a reader that wants much as a few
        large chunks; a full read is handed out as it is (no copy)."""
        chunk = self._chunks.popleft()
        if len(chunk) < READ_BYTES and self._chunks:
            parts = [chunk]
            size = len(chunk)
            while self._chunks and size + len(self._chunks[0]) <= max_bytes:
                part = self._chunks.popleft()
                parts.append(part)
                size += len(part)
            chunk = b"".join(parts)
        if len(chunk) > max_bytes:
            self._chunks.appendleft(chunk[max_bytes:])
            chunk = chunk[:max_bytes]
        self._buffered -= len(chunk)
        if self._buffered < BUFFER_LIMIT and not (self._eof or self._error is not None):
            self._register()
        return chunk

    def _register(self) -> None:
        if self._loop is None and self._fd >= 0:
            loop = asyncio.get_running_loop()
            loop.add_reader(self._fd, self._on_readable)
            self._loop = loop

    def _unregister(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed():
            loop.remove_reader(self._fd)

    def _on_readable(self) -> None:
        if self._fd < 0 or self._eof or self._error is not None:
            return
        try:
            data = os.read(self._fd, READ_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            self._error = error
            self._unregister()
        else:
            if data:
                self._chunks.append(data)
                self._buffered += len(data)
                if self._buffered >= BUFFER_LIMIT:
                    self._unregister()
            else:
                self._eof = True
                self._unregister()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


def drain_ended(stream: object, feed: Callable[[bytes], None]) -> bool:
    """Feeds what a pipe whose writers are gone still holds to `feed`, without waiting.

    True when the stream reached its end. False when more may still come or the stream is not
    a `PipeReader` (it cannot be read without waiting); what was read was fed all the same.
    At most `DRAIN_LIMIT` bytes are read, so a writer outside the tree cannot hold the loop.
    """
    if not isinstance(stream, PipeReader):
        return False
    budget = DRAIN_LIMIT
    try:
        while budget > 0:
            data = stream.receive_nowait(READ_BYTES)
            budget -= len(data)
            feed(data)
    except anyio.EndOfStream:
        return True
    except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    return False
