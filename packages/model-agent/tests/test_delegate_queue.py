"""The process-wide delegate queue: limit, FIFO order, capacity, cancel and release."""

from __future__ import annotations

import anyio
import pytest
from model_agent._delegate_queue import (
    DELEGATE_LIMIT,
    DELEGATE_QUEUE_CAPACITY,
    DelegateQueue,
    QueueFullError,
    delegate_queue,
)
from subagent_core import CancelSignal
from subagent_core.testing import poll_until


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_process_wide_queue_has_limit_3_and_capacity_32() -> None:
    queue = delegate_queue()
    assert queue is delegate_queue()
    assert (queue.limit, queue.capacity) == (DELEGATE_LIMIT, DELEGATE_QUEUE_CAPACITY) == (3, 32)


async def test_waiters_are_admitted_in_fifo_order() -> None:
    queue = DelegateQueue(limit=1, capacity=10)
    never = CancelSignal()
    admitted: list[int] = []
    with anyio.fail_after(10):
        assert await queue.acquire(never)
        async with anyio.create_task_group() as tg:
            for n in range(5):

                async def wait(n: int = n) -> None:
                    async with queue.slot(never) as ok:
                        assert ok
                        admitted.append(n)

                tg.start_soon(wait)
                await poll_until(lambda n=n: queue.queued == n + 1)
            queue.release()
    assert admitted == [0, 1, 2, 3, 4]
    assert (queue.running, queue.queued) == (0, 0)


async def test_a_full_queue_names_the_live_figures() -> None:
    queue = DelegateQueue(limit=2, capacity=1)
    hold = CancelSignal()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            assert await queue.acquire(hold)
            assert await queue.acquire(hold)
            tg.start_soon(queue.acquire, hold)
            await poll_until(lambda: queue.queued == 1)
            with pytest.raises(QueueFullError) as caught:
                await queue.acquire(CancelSignal())
            hold.cancel()
        queue.release()
        queue.release()
    assert str(caught.value) == "subagent queue is full (running: 2, queued: 1, limit: 2)"
    assert (queue.running, queue.queued) == (0, 0)


async def test_a_cancelled_waiter_never_gets_a_slot_and_the_next_one_does() -> None:
    queue = DelegateQueue(limit=1, capacity=5)
    hold = CancelSignal()
    first, second = CancelSignal(), CancelSignal()
    outcomes: dict[str, bool] = {}
    with anyio.fail_after(10):
        assert await queue.acquire(hold)
        async with anyio.create_task_group() as tg:

            async def wait(name: str, cancel: CancelSignal) -> None:
                outcomes[name] = await queue.acquire(cancel)

            tg.start_soon(wait, "first", first)
            await poll_until(lambda: queue.queued == 1)
            tg.start_soon(wait, "second", second)
            await poll_until(lambda: queue.queued == 2)
            first.cancel()
            await poll_until(lambda: queue.queued == 1)
            queue.release()
        assert outcomes == {"first": False, "second": True}
        assert queue.running == 1
        queue.release()
    assert (queue.running, queue.queued) == (0, 0)


async def test_cancel_wins_over_a_grant_in_the_same_moment() -> None:
    queue = DelegateQueue(limit=1, capacity=5)
    hold, waiter_cancel, next_cancel = CancelSignal(), CancelSignal(), CancelSignal()
    outcomes: list[bool] = []
    with anyio.fail_after(10):
        assert await queue.acquire(hold)
        async with anyio.create_task_group() as tg:

            async def wait(cancel: CancelSignal) -> None:
                outcomes.append(await queue.acquire(cancel))

            tg.start_soon(wait, waiter_cancel)
            await poll_until(lambda: queue.queued == 1)
            tg.start_soon(wait, next_cancel)
            await poll_until(lambda: queue.queued == 2)
            queue.release()  # grants the first waiter ...
            waiter_cancel.cancel()  # ... which is cancelled before it runs again
        assert outcomes == [False, True]
        queue.release()
    assert (queue.running, queue.queued) == (0, 0)


async def test_a_slot_is_released_when_the_holder_raises() -> None:
    queue = DelegateQueue(limit=1, capacity=0)

    async def hold_and_fail() -> None:
        async with queue.slot(CancelSignal()) as ok:
            assert ok
            assert queue.running == 1
            raise ZeroDivisionError

    with anyio.fail_after(10), pytest.raises(ZeroDivisionError):
        await hold_and_fail()
    assert (queue.running, queue.queued) == (0, 0)


async def test_a_waiter_whose_task_is_cancelled_leaves_the_queue() -> None:
    queue = DelegateQueue(limit=1, capacity=5)
    hold = CancelSignal()
    with anyio.fail_after(10):
        assert await queue.acquire(hold)
        async with anyio.create_task_group() as tg:
            tg.start_soon(queue.acquire, CancelSignal())
            await poll_until(lambda: queue.queued == 1)
            tg.cancel_scope.cancel()
        assert (queue.running, queue.queued) == (1, 0)
        queue.release()
    assert (queue.running, queue.queued) == (0, 0)


def test_release_without_a_slot_is_a_broken_contract() -> None:
    with pytest.raises(RuntimeError):
        DelegateQueue().release()
