"""The process-wide admission of delegated children: at most 3 running, 32 waiting, FIFO.

Children of every parent request share one limit, so ten parents delegating at once never run
more than three children against the model. Extra children wait in arrival order; a full queue
is refused at once with live figures; a child cancelled while waiting never starts; every end
(normal, failure, cancel, an exception) gives the slot to the next in line.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
from subagent_core import CancelSignal

DELEGATE_LIMIT = 3
"""Children running at once in the whole process."""

DELEGATE_QUEUE_CAPACITY = 32
"""Children that may wait for a slot; one more is refused."""


class QueueFullError(Exception):
    """No room in the queue; the message carries the live figures and nothing else."""

    def __init__(self, running: int, queued: int, limit: int) -> None:
        super().__init__(
            f"subagent queue is full (running: {running}, queued: {queued}, limit: {limit})"
        )
        self.running = running
        self.queued = queued
        self.limit = limit


class _Waiter:
    __slots__ = ("event", "granted")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.granted = False


class DelegateQueue:
    """A counting slot pool with a bounded FIFO of waiters, bound to cancel signals."""

    def __init__(
        self, *, limit: int = DELEGATE_LIMIT, capacity: int = DELEGATE_QUEUE_CAPACITY
    ) -> None:
        if limit < 1 or capacity < 0:
            raise ValueError("limit must be >= 1 and capacity >= 0")
        self._limit = limit
        self._capacity = capacity
        self._running = 0
        self._waiters: deque[_Waiter] = deque()

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def running(self) -> int:
        """Slots held right now."""
        return self._running

    @property
    def queued(self) -> int:
        """Children waiting for a slot right now."""
        return len(self._waiters)

    async def acquire(self, cancel: CancelSignal) -> bool:
        """Waits for a slot in FIFO order; False when `cancel` fired first (nothing held).

        Raises:
            QueueFullError: every slot is held and the queue is at capacity.
        """
        if cancel.cancelled:
            return False
        if self._running < self._limit and not self._waiters:
            self._running += 1
            return True
        if len(self._waiters) >= self._capacity:
            raise QueueFullError(self._running, len(self._waiters), self._limit)
        waiter = _Waiter()
        self._waiters.append(waiter)
        try:
            with cancel.cancel_scope():
                await waiter.event.wait()
        except BaseException:
            self._abandon(waiter)
            raise
        if not waiter.granted or cancel.cancelled:
            # Cancel wins even over a grant in the same moment; the slot goes to the next.
            self._abandon(waiter)
            return False
        return True

    def _abandon(self, waiter: _Waiter) -> None:
        if waiter.granted:
            self.release()
        else:
            self._waiters.remove(waiter)

    def release(self) -> None:
        """Gives a held slot back and wakes the next waiter(s)."""
        if self._running <= 0:
            raise RuntimeError("release() without a held slot")
        self._running -= 1
        while self._waiters and self._running < self._limit:
            waiter = self._waiters.popleft()
            waiter.granted = True
            self._running += 1
            waiter.event.set()

    @asynccontextmanager
    async def slot(self, cancel: CancelSignal) -> AsyncGenerator[bool]:
        """Holds a slot for the block (yields True), or yields False when cancelled first.

        Raises:
            QueueFullError: the queue is full.
        """
        acquired = await self.acquire(cancel)
        try:
            yield acquired
        finally:
            if acquired:
                self.release()


_PROCESS_QUEUE = DelegateQueue()


def delegate_queue() -> DelegateQueue:
    """The queue every `subagent_delegate` of this process shares by default."""
    return _PROCESS_QUEUE
