"""Our own stdin/stdout as a line channel, for the stdio servers (asyncio backend only).

Pipes and sockets join the event loop. Anything else (a regular file, a Windows console or
pipe) falls back to a daemon thread feeding stdin and synchronous writes to stdout, so
`harness sdk-runtime < requests.jsonl > out.jsonl` works too. Lines longer than the cap are
skipped whole (logged, never parsed), so one huge frame cannot exhaust memory.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading

_log = logging.getLogger("harness.stdio")

MAX_FRAME_BYTES = 16 * 1024 * 1024
"""The longest line a server accepts."""


class StdioLines:
    """stdin as bounded lines, stdout as whole frames; open with `await StdioLines.open()`."""

    def __init__(self, reader: asyncio.StreamReader, writer: _Writer) -> None:
        self._reader = reader
        self._writer = writer

    @classmethod
    async def open(cls, max_frame_bytes: int = MAX_FRAME_BYTES) -> StdioLines:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=max_frame_bytes)
        if not await _connect_stdin(loop, reader):
            _feed_from_thread(loop, reader)
        writer = _Writer()
        await writer.open(loop)
        return cls(reader, writer)

    async def receive_line(self) -> bytes | None:
        """The next line (without its newline), or None at end of input."""
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as end:
                return end.partial if end.partial else None
            except asyncio.LimitOverrunError as over:
                _log.warning("skipping an input line longer than the frame limit")
                await self._skip_line(over.consumed)
                continue
            except (OSError, ValueError):
                return None
            return line[:-1]

    async def _skip_line(self, consumed: int) -> None:
        await self._reader.readexactly(consumed)
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as over:
                await self._reader.readexactly(over.consumed)
            except asyncio.IncompleteReadError:
                return

    @property
    def broken(self) -> bool:
        """True once the reader of our stdout went away."""
        return self._writer.broken

    async def write(self, data: bytes) -> None:
        """Writes one frame; a closed stdout makes this and later writes no-ops."""
        await self._writer.write(data)

    def close(self) -> None:
        self._writer.close()


async def _connect_stdin(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> bool:
    if sys.platform == "win32":
        return False
    protocol = asyncio.StreamReaderProtocol(reader)
    try:
        await loop.connect_read_pipe(lambda: protocol, sys.stdin)
    except (ValueError, OSError):
        return False
    return True


def _feed_from_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    def feed() -> None:
        try:
            fd = sys.stdin.fileno()
            while chunk := os.read(fd, 65536):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        except (OSError, ValueError):
            pass
        finally:
            try:
                loop.call_soon_threadsafe(reader.feed_eof)
            except RuntimeError:
                pass  # the loop is already closed: nobody is reading any more

    threading.Thread(target=feed, daemon=True, name="harness-stdin").start()


class _Writer:
    def __init__(self) -> None:
        self._transport: asyncio.WriteTransport | None = None
        self._protocol: _DrainProtocol | None = None
        self._broken = False

    async def open(self, loop: asyncio.AbstractEventLoop) -> None:
        if sys.platform == "win32":
            return
        try:
            transport, protocol = await loop.connect_write_pipe(_DrainProtocol, sys.stdout)
        except (ValueError, OSError):
            return
        self._transport = transport
        self._protocol = protocol

    @property
    def broken(self) -> bool:
        return self._broken or (self._protocol is not None and self._protocol.lost)

    async def write(self, data: bytes) -> None:
        if self.broken:
            return
        if self._transport is None:
            try:
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
            except (OSError, ValueError):
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
