"""One waiter per child for its leader's exit, shared by whoever drives the child.

A warm child and then its run need to hear of the exit at different times; one task that lives
as long as the child serves both, so neither the hand-over nor a request starts or cancels a
watcher task of its own. Whoever currently drives the child sets `listener`, which is called
once, synchronously, when the exit is seen.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager

import anyio
from subagent_core.kit import ManagedProcess


def _nobody() -> None:
    """The listener before anyone drives the child."""


class ExitWatch:
    """The leader's exit, as an event and a one-shot callback."""

    def __init__(self) -> None:
        self.seen = anyio.Event()
        self.listener: Callable[[], None] = _nobody

    @property
    def exited(self) -> bool:
        return self.seen.is_set()

    def note_exit(self) -> None:
        self.seen.set()
        self.listener()


async def _watch(proc: ManagedProcess, watch: ExitWatch) -> None:
    await proc.wait()
    watch.note_exit()


@asynccontextmanager
async def watching_exit(proc: ManagedProcess) -> AsyncGenerator[ExitWatch]:
    """Runs the one watcher task for `proc` while the block lasts."""
    watch = ExitWatch()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_watch, proc, watch)
        try:
            yield watch
        finally:
            tg.cancel_scope.cancel()
