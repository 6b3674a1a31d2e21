"""A model round's text, bounded: past `max_bytes` it is cut and marked, never buffered."""

from __future__ import annotations

from typing import Final

DEFAULT_MAX_OUTPUT_BYTES: Final = 8 * 1024 * 1024
"""Most UTF-8 bytes kept of one round's answer (and of its reasoning)."""

OUTPUT_CUT_MARKER: Final = "\n[output truncated]"
"""Ends a text that was cut at its bound (the same words the other providers use)."""


class BoundedText:
    """Concatenated stream pieces that stop growing at `max_bytes` UTF-8 bytes.

    `add` returns what was kept of a piece (the marker once, where the cut falls), so an
    observer shows exactly the text the round ends with.
    """

    __slots__ = ("_bytes", "_max_bytes", "_pieces", "cut")

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._pieces: list[str] = []
        self._bytes = 0
        self.cut = False
        """True once text past the bound arrived (and was dropped)."""

    def add(self, piece: str) -> str:
        """Appends `piece` as far as the bound allows; returns the text actually appended."""
        if self.cut or not piece:
            return ""
        size = len(piece) if piece.isascii() else len(piece.encode("utf-8", "surrogatepass"))
        if self._bytes + size <= self._max_bytes:
            self._pieces.append(piece)
            self._bytes += size
            return piece
        room = self._max_bytes - self._bytes
        # Cut at a character boundary: never split a multi-byte character.
        head = piece.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
        self.cut = True
        kept = head + OUTPUT_CUT_MARKER
        self._pieces.append(kept)
        return kept

    @property
    def empty(self) -> bool:
        """True while nothing was kept."""
        return not self._pieces

    @property
    def text(self) -> str:
        """Everything kept, with the marker when cut."""
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""
