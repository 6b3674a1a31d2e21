"""A bounded head+tail capture of one output stream.

A command may print a gigabyte; the model needs the beginning and the end, and the agent's memory
must not grow with the flood. The buffer keeps the first `head_bytes` and the last `tail_bytes`
and counts the rest, then renders text that never splits a UTF-8 character at a cut.
"""

from __future__ import annotations

from dataclasses import dataclass

HEAD_BYTES = 16 * 1024
"""Bytes kept from the start of each stream."""

TAIL_BYTES = 16 * 1024
"""Bytes kept from the end of each stream."""


def omission_marker(omitted: int) -> str:
    """The text joining head and tail when bytes were left out."""
    return f"\n[… {omitted} bytes omitted …]\n"


@dataclass(frozen=True, slots=True)
class CapturedText:
    """What a stream showed: the text, its total size and the omitted byte range, if any."""

    text: str
    total_bytes: int
    omitted: tuple[int, int] | None
    """`[start, end)` byte offsets of the left-out middle, or None when nothing was left out."""


class HeadTailBuffer:
    """Keeps the first and last bytes of a stream and counts every byte fed."""

    __slots__ = ("_head", "_head_limit", "_tail", "_tail_limit", "_total")

    def __init__(self, *, head_bytes: int = HEAD_BYTES, tail_bytes: int = TAIL_BYTES) -> None:
        self._head_limit = head_bytes
        self._tail_limit = tail_bytes
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0

    @property
    def total_bytes(self) -> int:
        """Every byte fed so far."""
        return self._total

    def feed(self, data: bytes) -> None:
        """Adds a chunk; memory stays at most head + tail + one chunk."""
        self._total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        if len(data) >= self._tail_limit:
            self._tail = bytearray(data[len(data) - self._tail_limit :])
            return
        self._tail += data
        excess = len(self._tail) - self._tail_limit
        if excess > 0:
            del self._tail[:excess]

    def render(self) -> CapturedText:
        """The captured text; undecodable bytes become U+FFFD, cuts fall between characters."""
        if not self._tail or self._total == len(self._head) + len(self._tail):
            whole = bytes(self._head + self._tail)
            return CapturedText(whole.decode("utf-8", errors="replace"), self._total, None)
        head = bytes(self._head[: _head_cut(self._head)])
        tail_start = _tail_cut(self._tail)
        tail = bytes(self._tail[tail_start:])
        start = len(head)
        end = self._total - len(tail)
        text = (
            head.decode("utf-8", errors="replace")
            + omission_marker(end - start)
            + tail.decode("utf-8", errors="replace")
        )
        return CapturedText(text, self._total, (start, end))


def _sequence_length(lead: int) -> int:
    """Bytes a UTF-8 sequence starting with `lead` needs (1 for anything not a lead byte)."""
    if lead >= 0xF0:
        return 4
    if lead >= 0xE0:
        return 3
    if lead >= 0xC0:
        return 2
    return 1


def _head_cut(head: bytearray) -> int:
    """Length of `head` without a trailing incomplete UTF-8 sequence."""
    for back in range(1, min(4, len(head)) + 1):
        byte = head[-back]
        if byte & 0xC0 == 0x80:
            continue
        if _sequence_length(byte) > back:
            return len(head) - back
        return len(head)
    return len(head)


def _tail_cut(tail: bytearray) -> int:
    """Offset of the first byte in `tail` that does not continue a character cut away."""
    for index in range(min(3, len(tail))):
        if tail[index] & 0xC0 != 0x80:
            return index
    return min(3, len(tail))
