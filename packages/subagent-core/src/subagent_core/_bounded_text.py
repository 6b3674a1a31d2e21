"""A run's output text with a byte bound: past it, text is dropped and the cut is marked.

A child can stream without end; what a parent keeps of it is bounded here, once, for every
provider. The kept text never changes once added (an observer may have shown it already), so the
bound applies to the kept text and the marker follows it.
"""

from __future__ import annotations

from typing import Final

DEFAULT_MAX_OUTPUT_BYTES: Final = 8 * 1024 * 1024
"""Most UTF-8 bytes of output a run keeps by default (8 MiB)."""

OUTPUT_TRUNCATION_MARKER: Final = "\n[output truncated]"
"""Appended once, where the output was cut."""


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class BoundedText:
    """Concatenated pieces, kept up to `max_bytes` UTF-8 bytes; the rest is dropped and marked.

    The cut falls on a character boundary, so the result is the kept text (at most `max_bytes`
    bytes) followed by `OUTPUT_TRUNCATION_MARKER` when anything was dropped.
    """

    __slots__ = ("_cut", "_max_bytes", "_pieces", "_size")

    def __init__(self, max_bytes: int = DEFAULT_MAX_OUTPUT_BYTES) -> None:
        if isinstance(max_bytes, bool) or max_bytes < 0:
            raise ValueError("max_bytes must be a non-negative int")
        self._max_bytes = max_bytes
        self._pieces: list[str] = []
        self._size = 0
        self._cut = False

    @property
    def cut(self) -> bool:
        """True once text past the bound arrived (and was dropped)."""
        return self._cut

    @property
    def empty(self) -> bool:
        """True while nothing was kept."""
        return not self._pieces

    @property
    def size(self) -> int:
        """UTF-8 bytes kept, the marker not included."""
        return self._size

    def add(self, piece: str) -> str:
        """Appends `piece` as far as the bound allows; returns exactly what was appended.

        The return value is `piece` while it fits, its head plus the marker at the cut, and
        `""` afterwards, so an observer can show the same text the output ends with.
        """
        if self._cut or not piece:
            return ""
        size = _utf8_size(piece)
        room = self._max_bytes - self._size
        if size <= room:
            self._pieces.append(piece)
            self._size += size
            return piece
        # Never split a character: drop a partial one at the cut.
        head = piece.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
        self._size += _utf8_size(head)
        self._cut = True
        kept = head + OUTPUT_TRUNCATION_MARKER
        self._pieces.append(kept)
        return kept

    @property
    def text(self) -> str:
        """Everything kept, with the marker when cut."""
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""
