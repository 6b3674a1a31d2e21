"""The one asyncio-specific piece of the package: a run's owner task.

anyio has no task that outlives the call that started it, but a `ModelRun` needs one: its
`result()` settles `aborted` the moment the request is cancelled (core.md), while the child
winds down in a task that `dispose()` awaits, bounded. The run holds the only reference to the
task and awaits it; nothing else owns it. Outside asyncio (no running loop) there is no owner
task and the caller of `result()` drives the child itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


def spawn_owner(
    body: Callable[[], Coroutine[Any, Any, None]], name: str
) -> asyncio.Task[None] | None:
    """Starts `body()` as its own task on the running asyncio loop; None without one."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.create_task(body(), name=name)
