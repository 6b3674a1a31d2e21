"""The run's output bound: text past `max_output_bytes` is cut and marked, never buffered."""

from __future__ import annotations

from typing import Final

DEFAULT_MAX_OUTPUT_BYTES: Final = 8 * 1024 * 1024
"""Longest output a run keeps (8 MiB of UTF-8); a child streaming more cannot grow the parent."""

OUTPUT_TRUNCATION_MARKER: Final = "\n[output truncated]"
"""Appended where output was cut; counted inside the bound."""

_MARKER_BYTES: Final = len(OUTPUT_TRUNCATION_MARKER.encode("utf-8"))


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def bound_output(text: str, max_bytes: int) -> str:
    """`text` when it fits in `max_bytes` UTF-8 bytes; else its head, cut at a character
    boundary, plus the marker, the whole at most `max_bytes`."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    head = data[: max(0, max_bytes - _MARKER_BYTES)]
    # Move left to a character boundary: never split a multi-byte character.
    return head.decode("utf-8", "ignore") + OUTPUT_TRUNCATION_MARKER


class OutputAccumulator:
    """Concatenated text that stops growing once it exceeds the bound.

    Pieces are kept until their total passes `max_bytes`; later pieces only mark the text cut,
    so a child streaming without end costs at most the bound.
    """

    __slots__ = ("_bytes", "_max_bytes", "_pieces", "truncated")

    def __init__(self, max_bytes: int = DEFAULT_MAX_OUTPUT_BYTES) -> None:
        self._max_bytes = max_bytes
        self._pieces: list[str] = []
        self._bytes = 0
        self.truncated = False
        """True once text past the bound arrived (and was dropped)."""

    def add(self, text: str) -> None:
        """Appends `text` while the total fits; beyond it, only marks the output cut."""
        if self.truncated or not text:
            return
        self._pieces.append(text)
        self._bytes += _utf8_size(text)
        if self._bytes > self._max_bytes:
            self.truncated = True
            kept = bound_output("".join(self._pieces), self._max_bytes)
            self._pieces = [kept]

    @property
    def empty(self) -> bool:
        """True while nothing was added."""
        return not self._pieces

    @property
    def text(self) -> str:
        """The concatenation, bounded (with the marker when cut)."""
        joined = "".join(self._pieces)
        if len(self._pieces) > 1:
            self._pieces = [joined]
        return joined
