"""The client's per-request reply slot and its count of dropped frames.

Both exist so the reader never allocates per frame beyond fixed bounds: a reply slot per request
the client sent, and one counter for every frame it dropped (only the first few are logged, by
kind and size, never content).
"""

from __future__ import annotations

import logging
from typing import Final

import anyio

from ._errors import JSONRPCError, SDKError, TransportClosedError
from ._framing import Response
from ._json import JSONValue

_log = logging.getLogger("subagent_sdk")

_DROPS_LOGGED: Final = 16
"""Dropped frames logged one by one; later ones are only counted (summary at close)."""


class PendingReply:
    """The reply slot of one request: the first answer (or failure) wins."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: JSONValue = None
        self.error: SDKError | None = None

    def resolve(self, response: Response) -> None:
        if self.done.is_set():
            return
        if response.error is not None:
            error = response.error
            self.error = JSONRPCError(error.code, error.message, error.data)
        else:
            self.result = response.result
        self.done.set()

    def fail(self, message: str) -> None:
        if not self.done.is_set():
            self.error = TransportClosedError(message)
            self.done.set()


class DropCounter:
    """Counts frames the client dropped; logs the first few by kind and size, never content."""

    __slots__ = ("bytes", "count")

    def __init__(self) -> None:
        self.count = 0
        self.bytes = 0

    def drop(self, what: str, size: int) -> None:
        self.count += 1
        self.bytes += size
        if self.count <= _DROPS_LOGGED:
            _log.debug("dropped %s (%d bytes)", what, size)

    def summary(self) -> None:
        if self.count > _DROPS_LOGGED:
            _log.debug("dropped %d frames from the SDK runtime (%d bytes)", self.count, self.bytes)
