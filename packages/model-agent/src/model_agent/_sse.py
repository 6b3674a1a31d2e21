"""Server-sent events framing: bytes in, `data:` payloads out.

Only the parts of the SSE format chat-completions streams use: `data:` fields (several lines
join with `\\n`), a blank line ending an event, `:` comment lines (keep-alives: liveness, never
progress), other fields ignored. Lines end with `\\n`, `\\r\\n` or `\\r`.
"""

from __future__ import annotations

DEFAULT_MAX_EVENT_BYTES = 8 * 1024 * 1024
"""Largest event (all its `data:` lines together) or line a stream may send."""


class SSEFormatError(Exception):
    """The byte stream cannot be framed as SSE within its bounds."""


class EventTooLargeError(SSEFormatError):
    """One event's data, or one line, passed `max_event_bytes` (what was read is dropped)."""


class SSEDecoder:
    """Incremental decoder; `feed` returns the payloads of the events completed so far.

    Memory stays within about `max_event_bytes` plus one fed chunk: an unterminated line or
    an event of many `data:` lines past the bound raises `EventTooLargeError`.
    """

    __slots__ = ("_buffer", "_data", "_data_bytes", "_max_event_bytes", "_pending_cr", "_scanned")

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._max_event_bytes = max_event_bytes
        self._buffer = bytearray()
        self._scanned = 0
        """Bytes of `_buffer` already searched for a line end."""
        self._data: list[str] | None = None
        self._data_bytes = 0
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[str]:
        """Adds bytes; returns the `data` payload of every event they completed, in order."""
        payloads: list[str] = []
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._pending_cr = False
        self._buffer += chunk
        start = 0
        buffer = self._buffer
        while True:
            end = _line_end(buffer, max(start, self._scanned))
            self._scanned = 0
            if end < 0:
                break
            line = bytes(buffer[start:end])
            if buffer[end] == 0x0D:
                if end + 1 < len(buffer):
                    start = end + 2 if buffer[end + 1] == 0x0A else end + 1
                else:
                    start = end + 1
                    self._pending_cr = True
            else:
                start = end + 1
            self._line(line, payloads)
        del buffer[:start]
        if len(buffer) > self._max_event_bytes:
            raise EventTooLargeError
        self._scanned = len(buffer)
        return payloads

    def _line(self, line: bytes, payloads: list[str]) -> None:
        if not line:
            if self._data is not None:
                payloads.append("\n".join(self._data))
                self._data = None
            return
        if line.startswith(b":"):
            return
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            if self._data is None:
                self._data = []
                self._data_bytes = 0
            self._data_bytes += len(value) + 1
            if self._data_bytes > self._max_event_bytes:
                self._data = None
                raise EventTooLargeError
            self._data.append(value.decode("utf-8", errors="replace"))

    def flush(self) -> list[str]:
        """Payload of an event the stream ended without a blank line after (lenient, as clients are)."""
        payloads: list[str] = []
        if self._buffer:
            self._line(bytes(self._buffer), payloads)
            self._buffer.clear()
        if self._data is not None:
            payloads.append("\n".join(self._data))
            self._data = None
        return payloads


def _line_end(buffer: bytearray, start: int) -> int:
    lf = buffer.find(b"\n", start)
    cr = buffer.find(b"\r", start)
    if cr < 0:
        return lf
    if lf < 0:
        return cr
    return min(lf, cr)
