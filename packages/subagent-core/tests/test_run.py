"""SubagentRun as an async context manager: the child is disposed on every path."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from subagent_core import SubagentResult, SubagentRun
from subagent_core.kit import new_run_id


class RecordingRun(SubagentRun):
    """A run whose dispose needs a real await to finish, so an unshielded exit would skip it."""

    def __init__(self) -> None:
        self.id = new_run_id()
        self.disposed: list[str] = []

    async def result(self) -> SubagentResult:
        return SubagentResult(stop_reason="completed", output="ok")

    async def dispose(self) -> str | None:
        self.disposed.append("started")
        await anyio.lowlevel.checkpoint()  # a checkpoint: raises here if the exit were not shielded
        self.disposed.append("finished")
        return None


async def test_a_normal_exit_disposes() -> None:
    run = RecordingRun()
    with anyio.fail_after(5):
        async with run as entered:
            assert entered is run
            assert await run.result() == SubagentResult(stop_reason="completed", output="ok")
    assert run.disposed == ["started", "finished"]


async def test_an_exception_disposes_and_propagates() -> None:
    run = RecordingRun()

    async def fail() -> None:
        async with run:
            raise KeyError("boom")

    with anyio.fail_after(5), pytest.raises(KeyError):
        await fail()
    assert run.disposed == ["started", "finished"]


async def test_cancellation_disposes_fully() -> None:
    run = RecordingRun()
    with anyio.fail_after(5):
        with anyio.CancelScope() as scope:
            async with run:
                scope.cancel()
                await anyio.sleep_forever()
        assert scope.cancelled_caught
    assert run.disposed == ["started", "finished"]


async def test_a_task_cancelled_from_outside_disposes_fully() -> None:
    run = RecordingRun()
    inside = anyio.Event()

    async def hold() -> None:
        async with run:
            inside.set()
            await anyio.sleep_forever()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(hold)
            await inside.wait()
            tg.cancel_scope.cancel()
    assert run.disposed == ["started", "finished"]


def test_run_ids_are_fresh_uuid4_strings() -> None:
    import uuid

    ids = {new_run_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(uuid.UUID(value).version == 4 for value in ids)
