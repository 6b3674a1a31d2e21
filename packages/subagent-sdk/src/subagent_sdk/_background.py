"""Tasks owned by an object instead of a block: the one asyncio adapter of this package.

A provider publishes a run from `start()` and the holder disposes it later, possibly from
another task, so the client's reader and the run's driver cannot live in a task group of the
caller. Each is one owned task: its body is structured anyio code, its owner stops it with
`cancel()` and always awaits `wait()`, and nothing it raises escapes unobserved.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import anyio

_log = logging.getLogger("subagent_sdk")


class BackgroundTask:
    """Runs `body` in a task of its own until it returns or `cancel()` is called."""

    def __init__(self, body: Callable[[], Awaitable[None]], *, name: str) -> None:
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()
        self._task = asyncio.get_running_loop().create_task(self._main(body), name=name)

    async def _main(self, body: Callable[[], Awaitable[None]]) -> None:
        try:
            with self._scope:
                await body()
        except Exception:
            _log.exception("an SDK background task failed")
        finally:
            self._done.set()

    @property
    def done(self) -> bool:
        """True once the body has returned (or failed, or was cancelled)."""
        return self._done.is_set()

    def cancel(self) -> None:
        """Cancels the body (cleanup it shields still runs); idempotent."""
        self._scope.cancel()

    async def wait(self) -> None:
        """Waits until the body has finished."""
        await self._done.wait()
