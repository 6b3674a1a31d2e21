"""A run's output text with a byte bound."""

from __future__ import annotations

OUTPUT_CUT_MARKER = "\n[output truncated]"
"""Appended once where the output was cut at `max_output_bytes`."""


class BoundedText:
    """Concatenated chunks, kept up to `limit` UTF-8 bytes; the rest is dropped and marked.

    The cut falls on a character boundary, so the kept text is valid UTF-8 of at most `limit`
    bytes followed by `OUTPUT_CUT_MARKER`.
    """

    __slots__ = ("_chunks", "_cut", "_limit", "_size")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._chunks: list[str] = []
        self._size = 0
        self._cut = False

    @property
    def cut(self) -> bool:
        """True once text was dropped."""
        return self._cut

    def add(self, text: str) -> None:
        """Appends `text`, or as much of it as still fits."""
        if self._cut or not text:
            return
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        room = self._limit - self._size
        if size <= room:
            self._chunks.append(text)
            self._size += size
            return
        kept = text.encode("utf-8")[:room].decode("utf-8", "ignore")
        self._chunks.append(kept)
        self._chunks.append(OUTPUT_CUT_MARKER)
        self._size += len(kept.encode("utf-8"))
        self._cut = True

    def text(self) -> str:
        """The output so far (joined once per call)."""
        return "".join(self._chunks)
