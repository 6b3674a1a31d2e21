"""The stdio servers' input: stdin lines through core's bounded `LineReader`.

A server skips a line over the frame limit (logged, never parsed) and keeps serving: one
huge frame from a client cannot exhaust memory or end the session. Input ends at EOF or
when stdin breaks.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import anyio
import anyio.abc
from subagent_core.kit import DEFAULT_MAX_FRAME_BYTES, FrameTooLargeError, LineReader

_log = logging.getLogger("harness.stdio")


async def stdin_lines(
    receive: anyio.abc.ByteReceiveStream, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
) -> AsyncIterator[bytes]:
    """Yields each non-blank input line (without its line ending) until the input ends."""
    reader = LineReader(receive, max_frame_bytes=max_frame_bytes)
    while True:
        try:
            line = await reader.receive_line()
        except FrameTooLargeError:
            _log.warning("skipping an input line longer than %d bytes", max_frame_bytes)
            continue
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return
        if line.strip():
            yield line
