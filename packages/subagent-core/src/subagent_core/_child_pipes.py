"""`ChildPipes`: a spawned child's stdin and stdout with the bounds every wire keeps on them.

Each provider speaks its protocol as lines over the child's stdout and writes to its stdin,
and each keeps the same two bounds from its config: the longest line it reads, and the longest
one write may block (a child that stops reading must not hang the parent). One value carries
the pipes and those bounds from the spawn to the provider's wire.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio.abc

from ._child_config import ChildBounds
from ._framing import LineReader
from ._process import ManagedProcess


@dataclass(frozen=True, slots=True)
class ChildPipes:
    """A child's stdin and stdout, and the bounds its wire keeps on them."""

    stdin: anyio.abc.ByteSendStream
    stdout: anyio.abc.ByteReceiveStream
    max_frame_bytes: int
    """Longest line read from stdout; a longer one ends the wire."""
    write_timeout_seconds: float
    """Longest one write to stdin may block before the wire ends."""

    @classmethod
    def of(cls, proc: ManagedProcess, bounds: ChildBounds) -> ChildPipes:
        """`proc`'s pipes (opened with `stdin="pipe"` and `stdout="pipe"`) with `bounds`'
        frame and write bounds.

        Raises:
            RuntimeError: `proc` was opened without both pipes (a bug of the caller).
        """
        if proc.stdin is None or proc.stdout is None:
            raise RuntimeError("the child was opened without stdin and stdout pipes")
        return cls(proc.stdin, proc.stdout, bounds.max_frame_bytes, bounds.write_timeout_seconds)

    def lines(self) -> LineReader:
        """The child's stdout as lines, bounded by `max_frame_bytes`."""
        return LineReader(self.stdout, max_frame_bytes=self.max_frame_bytes)
