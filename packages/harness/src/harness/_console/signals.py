"""Ctrl-C and SIGTERM as a cancel signal, for commands that own a run."""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
from subagent_core import CancelSignal


@asynccontextmanager
async def cancel_on_signals(cancel: CancelSignal) -> AsyncGenerator[list[int]]:
    """While the block runs, SIGINT/SIGTERM fire `cancel` instead of raising KeyboardInterrupt.

    Yields a list that collects the signal numbers received (for the summary line).
    """
    received: list[int] = []
    if sys.platform == "win32":
        yield received
        return
    import signal

    async def watch() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for number in signals:
                received.append(int(number))
                cancel.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        try:
            yield received
        finally:
            tg.cancel_scope.cancel()
