"""One wait raced against a cancel signal: the shape every cancellable wait here shares."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
from subagent_core import CancelSignal


async def unless_cancelled(cancel: CancelSignal, wait: Callable[[], Awaitable[object]]) -> bool:
    """Awaits `wait()` unless `cancel` fires first; True when `wait()` returned."""
    finished = False
    async with anyio.create_task_group() as race:

        async def stop_on_cancel() -> None:
            await cancel.wait()
            race.cancel_scope.cancel()

        race.start_soon(stop_on_cancel)
        await wait()
        finished = True
        race.cancel_scope.cancel()
    return finished
