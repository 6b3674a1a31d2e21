"""CancelSignal.child() and cancel_scope(): linked cancellation with no watcher task and no leak."""

from __future__ import annotations

import asyncio
import gc

import anyio
from subagent_core import CancelSignal


def test_a_child_is_cancelled_by_its_parent_and_not_the_other_way_round() -> None:
    parent = CancelSignal()
    one, two = parent.child(), parent.child()
    grandchild = one.child()
    two.cancel()
    assert two.cancelled
    assert not parent.cancelled
    assert not one.cancelled
    parent.cancel()
    assert one.cancelled
    assert grandchild.cancelled
    assert parent.registrations == 0


def test_a_child_of_a_cancelled_signal_starts_cancelled() -> None:
    parent = CancelSignal()
    parent.cancel()
    child = parent.child()
    assert child.cancelled
    assert parent.registrations == 0


def test_a_dropped_child_releases_its_link() -> None:
    parent = CancelSignal()
    for _ in range(100):
        parent.child()
    kept = parent.child()
    gc.collect()
    assert parent.registrations == 1
    parent.cancel()
    assert kept.cancelled


async def test_cancel_cancels_the_scope_synchronously_without_a_watcher_task() -> None:
    signal = CancelSignal()
    reached: list[str] = []
    with anyio.fail_after(5):
        tasks_before = len(asyncio.all_tasks())
        with signal.cancel_scope() as scope:
            assert len(asyncio.all_tasks()) == tasks_before
            assert signal.registrations == 1
            signal.cancel()
            assert scope.cancel_called  # before any checkpoint ran
            reached.append("after cancel")
            await anyio.lowlevel.checkpoint()
            reached.append("never")
    assert reached == ["after cancel"]
    assert scope.cancelled_caught
    assert signal.registrations == 0


async def test_a_cancel_from_another_task_stops_the_guarded_work() -> None:
    signal = CancelSignal()
    outcome: list[bool] = []

    async def guarded() -> None:
        with signal.cancel_scope() as scope:
            await anyio.sleep_forever()
        outcome.append(scope.cancelled_caught)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(guarded)
            await anyio.wait_all_tasks_blocked()
            signal.cancel()
    assert outcome == [True]
    assert signal.registrations == 0


async def test_a_parent_cancel_reaches_a_scope_of_its_child() -> None:
    parent = CancelSignal()
    child = parent.child()
    with anyio.fail_after(5):
        with child.cancel_scope() as scope:
            parent.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert child.cancelled


async def test_an_already_cancelled_signal_gives_a_cancelled_scope() -> None:
    signal = CancelSignal()
    signal.cancel()
    with anyio.fail_after(5):
        with signal.cancel_scope() as scope:
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert signal.registrations == 0


async def test_a_scope_with_a_deadline_ends_there_and_still_obeys_the_signal() -> None:
    signal = CancelSignal()
    with anyio.fail_after(5):
        with signal.cancel_scope(deadline=anyio.current_time() - 1) as scope:
            await anyio.sleep_forever()
        assert scope.cancelled_caught
        assert not signal.cancelled
        assert signal.registrations == 0
        with signal.cancel_scope(deadline=anyio.current_time() + 3600) as scope:
            signal.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert signal.registrations == 0


async def test_every_exit_path_releases_the_registration() -> None:
    signal = CancelSignal()
    with anyio.fail_after(5):
        with signal.cancel_scope():
            pass
        try:
            with signal.cancel_scope():
                raise KeyError("x")
        except KeyError:
            pass
        timeout = anyio.move_on_after(0.001)
        with timeout, signal.cancel_scope():
            await anyio.sleep_forever()
        assert timeout.cancelled_caught  # the outer timeout, not the signal
        async with anyio.create_task_group() as tg:
            tg.start_soon(signal.wait)
            await anyio.wait_all_tasks_blocked()
            assert signal.registrations == 1
            tg.cancel_scope.cancel()
    assert signal.registrations == 0
    assert not signal.cancelled


async def test_a_timeout_stays_a_timeout_and_a_late_cancel_does_nothing() -> None:
    signal = CancelSignal()
    with anyio.fail_after(5):
        with anyio.move_on_after(0.001) as timeout, signal.cancel_scope() as scope:
            await anyio.sleep_forever()
    assert timeout.cancelled_caught
    assert not scope.cancelled_caught
    signal.cancel()  # the scope has exited: nothing to cancel, nothing raised
    assert not scope.cancel_called
