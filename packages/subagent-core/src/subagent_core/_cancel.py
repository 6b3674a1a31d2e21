"""The single cancellation channel a parent hands to a child run."""

from __future__ import annotations

import anyio


class CancelSignal:
    """A one-way latch: once cancelled it stays cancelled.

    It can be created outside a running event loop (the waiters' events are made lazily), so a
    `SubagentRequest` can be built anywhere. `cancel()` is synchronous and idempotent, so any
    code path, including a signal handler running in the loop, can call it.
    """

    __slots__ = ("_cancelled", "_waiters")

    def __init__(self) -> None:
        self._cancelled = False
        self._waiters: list[anyio.Event] = []

    @property
    def cancelled(self) -> bool:
        """True once `cancel()` has been called."""
        return self._cancelled

    def cancel(self) -> None:
        """Requests cancellation; wakes every waiter. Calling it again does nothing."""
        if self._cancelled:
            return
        self._cancelled = True
        waiters, self._waiters = self._waiters, []
        for event in waiters:
            event.set()

    async def wait(self) -> None:
        """Returns once the signal is cancelled (at once if it already is)."""
        if self._cancelled:
            return
        event = anyio.Event()
        self._waiters.append(event)
        try:
            await event.wait()
        finally:
            if event in self._waiters:
                self._waiters.remove(event)

    def __repr__(self) -> str:
        return f"CancelSignal(cancelled={self._cancelled})"
