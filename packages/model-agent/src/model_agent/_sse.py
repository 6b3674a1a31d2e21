"""Server-sent events framing: bytes in, `data:` payloads out.

Only the parts of the SSE format chat-completions streams use: `data:` fields (several lines
join with `\\n`), a blank line ending an event, `:` comment lines (keep-alives: liveness, never
progress), other fields ignored. Lines end with `\\n`, `\\r\\n` or `\\r`.
"""

from __future__ import annotations

MAX_LINE_BYTES = 8 * 1024 * 1024
"""A longer line is a malformed stream, not a reason to grow memory without bound."""


class SSEFormatError(Exception):
    """The byte stream cannot be framed as SSE (a line longer than `MAX_LINE_BYTES`)."""


class SSEDecoder:
    """Incremental decoder; `feed` returns the payloads of the events completed so far."""

    __slots__ = ("_buffer", "_data", "_pending_cr")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data: list[str] | None = None
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
            end = _line_end(buffer, start)
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
        if len(buffer) > MAX_LINE_BYTES:
            raise SSEFormatError
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
