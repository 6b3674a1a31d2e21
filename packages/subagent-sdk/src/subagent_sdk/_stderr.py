"""The runtime's stderr: drained continuously, newest lines kept for host logs only."""

from __future__ import annotations

import logging
from collections import deque
from typing import Final

import anyio
import anyio.abc

_log = logging.getLogger("subagent_sdk")

STDERR_TAIL_LINES: Final = 400
_MAX_LINE_CHARS: Final = 4096
_RECEIVE_BYTES: Final = 65536


class StderrTail:
    """Reads a stderr pipe to its end so the runtime never blocks on it.

    Each line is logged at DEBUG on the `subagent_sdk` logger and the newest 400 are kept (each
    cut to 4096 characters) for `TransportClosedError`'s message. Nothing here ever reaches a
    diagnostic.
    """

    def __init__(self) -> None:
        self._lines: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._partial = bytearray()
        self.ended = anyio.Event()
        """Set once the pipe reached its end (or failed)."""

    @property
    def lines(self) -> list[str]:
        """The newest lines, oldest first."""
        return list(self._lines)

    def _add(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")[:_MAX_LINE_CHARS]
        self._lines.append(line)
        _log.debug("sdk runtime stderr: %s", line)

    async def drain(self, stream: anyio.abc.ByteReceiveStream) -> None:
        """Reads until end of stream; never raises for a broken pipe."""
        try:
            while True:
                try:
                    data = await stream.receive(_RECEIVE_BYTES)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
                except OSError:
                    break
                self._partial += data
                *complete, rest = self._partial.split(b"\n")
                for raw in complete:
                    self._add(bytes(raw))
                # Bound an endless line: keep its head, drop the rest.
                self._partial = bytearray(rest[: _MAX_LINE_CHARS * 4])
        finally:
            if self._partial:
                self._add(bytes(self._partial))
                self._partial.clear()
            self.ended.set()
