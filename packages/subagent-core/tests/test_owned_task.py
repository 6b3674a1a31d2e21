"""OwnedTask: a body that outlives its starter, stopped by cancel(), always observed."""

from __future__ import annotations

import gc
import logging

import anyio
import pytest
from subagent_core.kit import OwnedTask


def test_starting_without_a_running_loop_is_refused() -> None:
    async def body() -> None:
        return None

    with pytest.raises(RuntimeError):
        OwnedTask.start(body, name="test.owned")


async def test_the_body_outlives_the_call_that_started_it() -> None:
    steps: list[str] = []
    release = anyio.Event()

    async def body() -> None:
        steps.append("started")
        await release.wait()
        steps.append("finished")

    def start() -> OwnedTask:
        return OwnedTask.start(body, name="test.owned")

    with anyio.fail_after(5):
        owned = start()
        assert not owned.done
        await anyio.wait_all_tasks_blocked()
        assert steps == ["started"]
        release.set()
        await owned.wait()
    assert owned.done
    assert steps == ["started", "finished"]


async def test_cancel_stops_the_body_and_its_shielded_cleanup_still_runs() -> None:
    steps: list[str] = []

    async def body() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.lowlevel.checkpoint()
                steps.append("cleaned up")

    with anyio.fail_after(5):
        owned = OwnedTask.start(body, name="test.owned")
        await anyio.wait_all_tasks_blocked()
        owned.cancel()
        owned.cancel()  # idempotent
        await owned.wait()
    assert steps == ["cleaned up"]
    assert owned.done


async def test_cancel_before_the_body_first_runs_still_ends_wait() -> None:
    steps: list[str] = []

    async def body() -> None:
        steps.append("entered")
        await anyio.lowlevel.checkpoint()
        steps.append("past the first checkpoint")

    with anyio.fail_after(5):
        owned = OwnedTask.start(body, name="test.owned")
        owned.cancel()
        await owned.wait()
    assert steps in ([], ["entered"])


async def test_a_failing_body_is_logged_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    async def body() -> None:
        raise ValueError("boom")

    with anyio.fail_after(5), caplog.at_level(logging.ERROR, logger="subagent_core"):
        owned = OwnedTask.start(body, name="test.owned")
        await owned.wait()
    assert owned.done
    assert [r.getMessage() for r in caplog.records] == ["owned task test.owned failed"]


async def test_a_dropped_owner_does_not_lose_the_running_body() -> None:
    finished = anyio.Event()
    release = anyio.Event()

    async def body() -> None:
        await release.wait()
        finished.set()

    with anyio.fail_after(5):
        OwnedTask.start(body, name="test.owned")  # the reference is dropped at once
        await anyio.wait_all_tasks_blocked()
        gc.collect()
        release.set()
        await finished.wait()


async def test_cancelling_a_waiter_leaves_the_body_running() -> None:
    release = anyio.Event()

    async def body() -> None:
        await release.wait()

    with anyio.fail_after(5):
        owned = OwnedTask.start(body, name="test.owned")
        with anyio.move_on_after(0.01):
            await owned.wait()
        assert not owned.done
        release.set()
        await owned.wait()
    assert owned.done
