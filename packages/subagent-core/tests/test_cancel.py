"""CancelSignal: a one-way latch usable before any event loop runs."""

from __future__ import annotations

import anyio
from subagent_core import CancelSignal, SubagentRequest


def test_a_signal_made_outside_a_loop_wakes_a_waiter_inside_one() -> None:
    signal = CancelSignal()  # no event loop is running here
    request = SubagentRequest(prompt="hi")  # a fresh signal by default, also outside a loop
    assert not signal.cancelled
    assert not request.cancel.cancelled
    woke: list[bool] = []

    async def main() -> None:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def waiter() -> None:
                    await signal.wait()
                    woke.append(signal.cancelled)

                tg.start_soon(waiter)
                await anyio.wait_all_tasks_blocked()
                assert woke == []
                signal.cancel()

    anyio.run(main, backend="asyncio")
    assert woke == [True]


async def test_wait_after_cancel_returns_at_once() -> None:
    signal = CancelSignal()
    signal.cancel()
    signal.cancel()  # idempotent
    assert signal.cancelled
    with anyio.fail_after(5):
        await signal.wait()
        await signal.wait()
    assert repr(signal) == "CancelSignal(cancelled=True)"


async def test_every_waiter_wakes_and_a_cancelled_waiter_leaves_no_trace() -> None:
    signal = CancelSignal()
    woke: list[int] = []

    async def waiter(n: int) -> None:
        await signal.wait()
        woke.append(n)

    with anyio.fail_after(5):
        with anyio.CancelScope() as abandoned:
            async with anyio.create_task_group() as tg:
                tg.start_soon(waiter, 0)
                await anyio.wait_all_tasks_blocked()
                abandoned.cancel()
        assert woke == []
        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(waiter, n)
            await anyio.wait_all_tasks_blocked()
            signal.cancel()
    assert sorted(woke) == [0, 1, 2]


def test_requests_get_their_own_signal() -> None:
    one, two = SubagentRequest(prompt="a"), SubagentRequest(prompt="b")
    one.cancel.cancel()
    assert not two.cancel.cancelled
