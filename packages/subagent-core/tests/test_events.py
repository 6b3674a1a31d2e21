"""Run events: closed vocabularies, the bounded drop-oldest buffer, SubagentRun.events()."""

from __future__ import annotations

import gc
from enum import Enum
from typing import get_args

import anyio
import pytest
from subagent_core import (
    NO_CAPABILITIES,
    EventsDropped,
    MessageChunk,
    PermissionEvent,
    PlanEntry,
    PlanEvent,
    SubagentEvent,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    ThoughtChunk,
    ToolCallEvent,
    ToolKind,
    UsageEvent,
)
from subagent_core._diagnostics import ACP_TOOL_KINDS
from subagent_core.kit import (
    DEFAULT_EVENT_CAPACITY,
    EventBuffer,
    new_run_id,
    permission_decision,
    permission_policy,
    plan_entry_priority,
    plan_entry_status,
    tool_call_status,
    tool_kind,
)


async def drain(buffer: EventBuffer) -> list[SubagentEvent]:
    with anyio.fail_after(5):
        return [event async for event in buffer.events()]


def chunk(n: int) -> MessageChunk:
    return MessageChunk(text=str(n))


class _Kind(Enum):
    EXECUTE = "execute"


def test_vocabularies_are_closed_and_normalised() -> None:
    assert set(get_args(ToolKind)) == ACP_TOOL_KINDS
    assert tool_kind("execute") == "execute"
    assert tool_kind(_Kind.EXECUTE) == "execute"
    assert tool_kind("rm -rf /") == "other"
    assert tool_kind(None) == "other"
    assert tool_call_status("in_progress") == "in_progress"
    assert tool_call_status("exploded") == "unknown"
    assert plan_entry_priority("high") == "high"
    assert plan_entry_priority(3) == "unknown"
    assert plan_entry_status("completed") == "completed"
    assert plan_entry_status("failed") == "unknown"
    assert permission_policy("ask") == "ask"
    assert permission_policy("yolo") == "unknown"
    assert permission_decision("reject_always") == "reject_always"
    assert permission_decision("sure") == "unknown"


def test_events_normalise_child_values_on_construction() -> None:
    raw: object = "SECRET-kind"
    event = ToolCallEvent(call_id="c1", kind=raw, status="weird", title="t", exit_code=True)  # type: ignore[arg-type]
    assert event == ToolCallEvent(call_id="c1", kind="other", status="unknown", title="t")
    assert ToolCallEvent(call_id="c2").kind is None  # not stated by this update
    assert ToolCallEvent(call_id="c3", exit_code=2).exit_code == 2
    entry = PlanEntry(content="step", priority="urgent", status="done")  # type: ignore[arg-type]
    assert (entry.priority, entry.status) == ("unknown", "unknown")
    plan = PlanEvent(entries=[entry])  # type: ignore[arg-type]
    assert plan.entries == (entry,)
    permission = PermissionEvent(tool_kind="nuke", policy="allow", decision="allow_once")  # type: ignore[arg-type]
    assert permission.tool_kind == "other"
    assert UsageEvent(input_tokens=-1, output_tokens=7) == UsageEvent(output_tokens=7)


async def test_events_arrive_in_order_and_the_iterator_ends_at_close() -> None:
    buffer = EventBuffer()
    sent: list[SubagentEvent] = [
        MessageChunk(text="a"),
        ThoughtChunk(text="b"),
        ToolCallEvent(call_id="1", kind="read", status="pending", title="read x"),
        PlanEvent(entries=(PlanEntry(content="p", priority="low", status="pending"),)),
        PermissionEvent(tool_kind="edit", policy="reject", decision="cancelled"),
        UsageEvent(input_tokens=1, output_tokens=2),
    ]
    for event in sent:
        buffer.publish(event)
    buffer.close()
    buffer.publish(MessageChunk(text="after close"))  # ignored
    assert await drain(buffer) == sent
    assert await drain(buffer) == []


async def test_a_waiting_consumer_is_woken_by_publish_and_by_close() -> None:
    buffer = EventBuffer()
    got: list[SubagentEvent] = []

    async def consume() -> None:
        async for event in buffer.events():
            got.append(event)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            buffer.publish(chunk(1))
            await anyio.wait_all_tasks_blocked()
            assert got == [chunk(1)]
            buffer.close()
    assert got == [chunk(1)]


async def test_drops_are_coalesced_in_place_with_exact_counts() -> None:
    buffer = EventBuffer(capacity=4)
    for n in range(10):
        buffer.publish(chunk(n))
    assert len(buffer) == 4
    events = buffer.events()
    with anyio.fail_after(5):
        assert await anext(events) == EventsDropped(count=6)
        assert await anext(events) == chunk(6)
        for n in range(10, 15):  # holding 7, 8, 9 and 10..14: three more drop
            buffer.publish(chunk(n))
        buffer.close()
        rest = [event async for event in events]
    assert rest == [EventsDropped(count=4), chunk(11), chunk(12), chunk(13), chunk(14)]


async def test_a_dropped_drop_marker_keeps_its_count() -> None:
    buffer = EventBuffer(capacity=2)
    buffer.publish(EventsDropped(count=5))  # e.g. forwarded from a nested run
    buffer.publish(chunk(1))
    buffer.publish(chunk(2))
    buffer.close()
    assert await drain(buffer) == [EventsDropped(count=5), chunk(1), chunk(2)]


async def test_held_child_text_is_bounded_and_the_newest_event_is_kept() -> None:
    buffer = EventBuffer(capacity=100, max_text_chars=10)
    for n in range(5):
        buffer.publish(MessageChunk(text=f"{n}" * 4))
    buffer.publish(MessageChunk(text="x" * 50))  # alone over the bound: kept, the rest drop
    buffer.close()
    assert await drain(buffer) == [EventsDropped(count=5), MessageChunk(text="x" * 50)]


def test_bad_bounds_are_refused() -> None:
    for bad in (0, -1, True):
        with pytest.raises(ValueError, match="capacity must be a positive int"):
            EventBuffer(bad)
        with pytest.raises(ValueError, match="max_text_chars must be a positive int"):
            EventBuffer(max_text_chars=bad)


def held_chunks() -> int:
    gc.collect()
    return sum(1 for obj in gc.get_objects() if type(obj) is MessageChunk)


async def test_a_consumer_that_never_reads_keeps_at_most_the_capacity() -> None:
    """100k publishes with nobody reading: objects held stay at the capacity, one drop marker."""
    assert DEFAULT_EVENT_CAPACITY == 1024
    baseline = held_chunks()
    buffer = EventBuffer()
    for n in range(100_000):
        buffer.publish(MessageChunk(text=f"chunk {n}"))
        assert len(buffer) <= 1024
    assert held_chunks() - baseline == 1024
    buffer.close()
    events = await drain(buffer)
    assert events[0] == EventsDropped(count=100_000 - 1024)
    assert events[1:] == [MessageChunk(text=f"chunk {n}") for n in range(100_000 - 1024, 100_000)]


class _Run(SubagentRun):
    def __init__(self, publishes: bool) -> None:
        self.id = new_run_id()
        self.settled = anyio.Event()
        if publishes:
            self._events = EventBuffer()

    def emit(self, event: SubagentEvent) -> None:
        assert self._events is not None
        self._events.publish(event)

    def settle(self) -> None:
        if self._events is not None:
            self._events.close()
        self.settled.set()

    async def result(self) -> SubagentResult:
        await self.settled.wait()
        return SubagentResult(stop_reason="completed", output="done")

    async def dispose(self) -> str | None:
        self.settle()
        return None


class _Provider:
    name = "events"
    capabilities = NO_CAPABILITIES
    inherits_parent_context = False

    def __init__(self, run: _Run) -> None:
        self.run = run

    async def start(self, request: SubagentRequest) -> SubagentRun:
        return self.run


async def test_run_events_through_the_registry_end_when_the_run_settles() -> None:
    inner = _Run(publishes=True)
    registry = SubagentRegistry()
    registry.register(_Provider(inner))
    got: list[SubagentEvent] = []
    with anyio.fail_after(5):
        async with await registry.start("events", SubagentRequest(prompt="p")) as run:
            async with anyio.create_task_group() as tg:

                async def watch() -> None:
                    async for event in run.events():
                        got.append(event)

                tg.start_soon(watch)
                inner.emit(MessageChunk(text="live"))
                await anyio.wait_all_tasks_blocked()
                assert got == [MessageChunk(text="live")]  # before the run settled
                inner.emit(UsageEvent(input_tokens=3, output_tokens=4))
                inner.settle()
            assert (await run.result()).output == "done"
    assert got == [MessageChunk(text="live"), UsageEvent(input_tokens=3, output_tokens=4)]


async def test_a_run_that_publishes_nothing_yields_nothing_and_ends_at_settle() -> None:
    run = _Run(publishes=False)
    ended: list[bool] = []

    async def watch() -> None:
        async for _ in run.events():
            pass
        ended.append(True)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await anyio.wait_all_tasks_blocked()
            assert ended == []
            run.settle()
    assert ended == [True]


async def test_the_result_is_the_same_whether_or_not_events_were_read() -> None:
    results: list[SubagentResult] = []
    for read in (False, True):
        run = _Run(publishes=True)
        for n in range(3000):
            run.emit(chunk(n))
        run.settle()
        if read:
            assert len(await drain_run(run)) == 1025
        results.append(await run.result())
    assert results[0] == results[1]


async def drain_run(run: SubagentRun) -> list[SubagentEvent]:
    with anyio.fail_after(5):
        return [event async for event in run.events()]
