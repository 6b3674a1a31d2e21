"""Bounded line framing over anyio byte streams: the one NDJSON reader every protocol uses.

A peer controls what it writes, so a line is capped (`max_frame_bytes`) and an over-long one is
read to its newline and thrown away in bounded chunks, never held whole. The reader hands out
bytes: decoding (UTF-8, JSON) is the caller's, so a bad frame becomes the caller's value or
diagnostic instead of a crash here.
"""

from __future__ import annotations

from typing import Final

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.streams.buffered import BufferedByteReceiveStream

DEFAULT_MAX_FRAME_BYTES: Final = 16 * 1024 * 1024
"""The longest line (without its line ending) a reader accepts by default: 16 MiB."""

_FAIRNESS_LINES: Final = 16
"""A reader yields to the event loop at least once per this many lines, even when data is
already buffered, so one flooding peer cannot starve every other task."""

_DISCARD_CHUNK: Final = 65536


class FrameTooLargeError(Exception):
    """A line was longer than the reader's `max_frame_bytes`.

    Raised as soon as the limit is passed, without reading the rest of the line. The reader is
    still usable: the next `receive_line()` first discards the rest of that line (in bounded
    chunks), then returns the line after it. A client usually stops here; a server skips the
    line by calling again.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"a line was longer than the frame limit of {limit} bytes")
        self.limit = limit
        """The `max_frame_bytes` that was exceeded."""


class LineReader:
    """Reads newline-terminated lines from a byte stream, each at most `max_frame_bytes` long.

    `\\n` and `\\r\\n` both end a line and are not part of it. A final line without a newline
    is returned before `anyio.EndOfStream`. Each over-long line raises `FrameTooLargeError`
    once. Cancelling `receive_line()` loses no data, and a cancel during the discard of an
    over-long line resumes that discard on the next call.

    Errors of the underlying stream (`anyio.BrokenResourceError`, `anyio.ClosedResourceError`,
    `OSError`) pass through unchanged.
    """

    def __init__(
        self,
        stream: anyio.abc.AnyByteReceiveStream,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        if isinstance(max_frame_bytes, bool) or max_frame_bytes < 1:
            raise ValueError("max_frame_bytes must be a positive int")
        self._buffered = BufferedByteReceiveStream(stream)
        self._max = max_frame_bytes
        # Room for the line, a `\r` and one byte more: only a certainly over-long line trips it.
        self._until_limit = max_frame_bytes + 2
        self._since_checkpoint = 0
        self._discarding = False
        self._eof = False

    @property
    def max_frame_bytes(self) -> int:
        """The longest accepted line, in bytes, not counting its line ending."""
        return self._max

    async def receive_line(self) -> bytes:
        """The next line, without its `\\n` or `\\r\\n`.

        Raises:
            anyio.EndOfStream: the stream ended and every line was returned.
            FrameTooLargeError: the next line is over the limit; the next call skips its rest.
        """
        self._since_checkpoint += 1
        if self._since_checkpoint >= _FAIRNESS_LINES:
            # Before consuming anything, so a cancel delivered here loses no line.
            self._since_checkpoint = 0
            await anyio.lowlevel.checkpoint()
        if self._discarding:
            await self._discard_rest()
        if self._eof:
            raise anyio.EndOfStream
        try:
            line = await self._buffered.receive_until(b"\n", self._until_limit)
        except anyio.DelimiterNotFound:
            # The whole buffer was searched and holds no newline: it is all part of this line.
            # Drop it now and the rest on the next call, so a caller that stops reads no more.
            self._discarding = True
            await self._buffered.receive(len(self._buffered.buffer))
            raise FrameTooLargeError(self._max) from None
        except anyio.IncompleteRead:
            self._eof = True
            return await self._final_line()
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self._max:
            raise FrameTooLargeError(self._max)
        return line

    async def _final_line(self) -> bytes:
        rest = self._buffered.buffer
        if not rest:
            raise anyio.EndOfStream
        await self._buffered.receive(len(rest))
        if len(rest) > self._max:
            raise FrameTooLargeError(self._max)
        return rest

    async def _discard_rest(self) -> None:
        """Reads and drops bytes up to and including the next newline (or the end)."""
        chunks = 0
        while True:
            try:
                chunk = await self._buffered.receive(_DISCARD_CHUNK)
            except anyio.EndOfStream:
                self._discarding = False
                self._eof = True
                return
            newline = chunk.find(b"\n")
            if newline >= 0:
                self._discarding = False
                # Put the tail back in front of anything the stream had buffered after it.
                surplus = self._buffered.buffer
                if surplus:
                    await self._buffered.receive(len(surplus))
                self._buffered.feed_data(chunk[newline + 1 :] + surplus)
                return
            chunks += 1
            if chunks % _FAIRNESS_LINES == 0:
                await anyio.lowlevel.checkpoint()
