"""Our own stdin/stdout as asyncio streams, for the stdio servers (asyncio backend only).

POSIX connects the pipes to the event loop; Windows feeds stdin from a daemon thread (pipes
cannot join the selector there) and writes stdout synchronously.
"""

from __future__ import annotations

import asyncio
import sys
import threading


async def open_stdin(limit: int) -> asyncio.StreamReader:
    """stdin as a StreamReader whose line limit is `limit` bytes."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    if sys.platform == "win32":

        def feed() -> None:
            try:
                while chunk := sys.stdin.buffer.read1(65536):
                    loop.call_soon_threadsafe(reader.feed_data, chunk)
            finally:
                loop.call_soon_threadsafe(reader.feed_eof)

        threading.Thread(target=feed, daemon=True, name="harness-stdin").start()
        return reader
    protocol = asyncio.StreamReaderProtocol(reader)
    await loop.connect_read_pipe(lambda: protocol, sys.stdin)
    return reader


class StdoutWriter:
    """Writes whole frames to stdout; a closed pipe makes later writes no-ops."""

    def __init__(self) -> None:
        self._transport: asyncio.WriteTransport | None = None
        self._protocol: _DrainProtocol | None = None
        self._broken = False

    async def open(self) -> None:
        if sys.platform == "win32":
            return
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.connect_write_pipe(_DrainProtocol, sys.stdout)
        self._transport = transport
        self._protocol = protocol

    @property
    def broken(self) -> bool:
        """True once the reader of our stdout went away."""
        return self._broken or (self._protocol is not None and self._protocol.lost)

    async def write(self, data: bytes) -> None:
        if self.broken:
            return
        if self._transport is None:
            try:
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
            except OSError:
                self._broken = True
            return
        if self._transport.is_closing():
            self._broken = True
            return
        self._transport.write(data)
        assert self._protocol is not None
        await self._protocol.drain()

    def close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()


class _DrainProtocol(asyncio.BaseProtocol):
    def __init__(self) -> None:
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self.lost = False

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.resume_writing()

    async def drain(self) -> None:
        if self._paused and not self.lost:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
