"""Live run events from real runtimes: exact sequences, bounded when unread, result unchanged."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st
from subagent_core import (
    EventsDropped,
    MessageChunk,
    SubagentEvent,
    SubagentRequest,
    SubagentResult,
    ThoughtChunk,
    ToolCallEvent,
)
from subagent_core.testing import poll_until
from subagent_sdk import SDKProvider
from subagent_sdk._facts import turn_end_result
from subagent_sdk.client import Notification, RunTranscript
from subagent_sdk.testing import FakeScript

Provider = Callable[..., SDKProvider]
Watch = Callable[[], AbstractAsyncContextManager[Any]]

MIB = 1024 * 1024


async def _consumed(sdk: SDKProvider, cwd: Path) -> tuple[list[SubagentEvent], SubagentResult]:
    """Reads every event while the run goes, then its result."""
    run = await sdk.start(SubagentRequest(prompt="hi", cwd=cwd))
    async with run:
        events = [event async for event in run.events()]
        result = await run.result()
    return events, result


async def _unconsumed(sdk: SDKProvider, cwd: Path) -> SubagentResult:
    run = await sdk.start(SubagentRequest(prompt="hi", cwd=cwd))
    async with run:
        return await run.result()


async def test_each_activity_kind_becomes_the_expected_events_in_order(
    provider: Provider, tmp_path: Path
) -> None:
    """Only the root session's activity inside its turn after the receipt is published; the
    final message repeats streamed text, so it adds nothing."""
    script = FakeScript(
        text="abcdef",
        deltas=3,
        reasoning="thinking",
        tools=[{"name": "read_file"}, {"name": "process_execute", "is_error": True}],
        subagent={"text": "CHILD TEXT"},
        stream_before_receipt="EARLY",
        stream_after_turn_end="LATE",
    )
    with anyio.fail_after(30):
        events, result = await _consumed(provider(script), tmp_path)
    assert events == [
        ThoughtChunk(text="thinking"),
        ToolCallEvent(call_id="call-1", status="in_progress", title="read_file"),
        ToolCallEvent(call_id="call-1", status="completed"),
        ToolCallEvent(call_id="call-2", status="in_progress", title="process_execute"),
        ToolCallEvent(call_id="call-2", status="failed"),
        MessageChunk(text="ab"),
        MessageChunk(text="cd"),
        MessageChunk(text="ef"),
    ]
    assert result == SubagentResult(stop_reason="completed", output="abcdef")


async def test_a_final_message_that_was_not_streamed_is_one_message_chunk(
    provider: Provider, tmp_path: Path
) -> None:
    with anyio.fail_after(30):
        events, result = await _consumed(provider(FakeScript(text="whole", deltas=0)), tmp_path)
    assert events == [MessageChunk(text="whole")]
    assert result == SubagentResult(stop_reason="completed", output="whole")


async def test_the_result_is_the_same_whether_or_not_events_are_read(
    provider: Provider, tmp_path: Path
) -> None:
    scripts = [
        FakeScript(text="answer", deltas=2, reasoning="r", tools=[{"name": "t"}]),
        FakeScript(text="partial", deltas=2, turn_end={"kind": "error"}),
        FakeScript(text="streamed", deltas=2, malformed_message=True),
        FakeScript(text="half", omit_turn_end=True),
    ]
    with anyio.fail_after(60):
        for script in scripts:
            _, consumed = await _consumed(provider(script), tmp_path)
            assert await _unconsumed(provider(script), tmp_path) == consumed


async def test_a_run_that_fails_to_settle_normally_still_ends_its_events(
    provider: Provider, tmp_path: Path
) -> None:
    """Local cancel settles the run; the event stream ends there, with what came before."""
    ready = tmp_path / "ready"
    script = FakeScript(text="partial", deltas=1, hang_at="deltas", ready_file=str(ready))
    request = SubagentRequest(prompt="hi", cwd=tmp_path)
    with anyio.fail_after(30):
        run = await provider(script).start(request)
        async with run:
            events: list[SubagentEvent] = []
            async with anyio.create_task_group() as task_group:

                async def read() -> None:
                    events.extend([event async for event in run.events()])

                task_group.start_soon(read)
                await poll_until(ready.exists)
                request.cancel.cancel()
            result = await run.result()
    assert result == SubagentResult(stop_reason="aborted", output="partial")
    assert events == [MessageChunk(text="partial")]


async def test_100k_unread_updates_cost_a_bounded_buffer_and_one_drop_count(
    hostile: Callable[..., SDKProvider], rss: Watch, tmp_path: Path
) -> None:
    count = 100_000
    with anyio.fail_after(90):
        async with rss() as watch:
            run = await hostile("many-deltas", str(count)).start(
                SubagentRequest(prompt="hi", cwd=tmp_path)
            )
            async with run:
                result = await run.result()
                events = [event async for event in run.events()]
    assert result == SubagentResult(stop_reason="completed", output="x" * count)
    assert events == [EventsDropped(count=count - 1024), *[MessageChunk(text="x")] * 1024]
    assert watch.growth <= 32 * MIB


_secret = st.text(min_size=1, max_size=20).map(lambda text: "SECRET-" + text)


def _event(kind: str, data: dict[str, object]) -> Notification:
    return Notification(
        "session.event",
        {"sessionId": "root", "event": {"type": kind, "seq": 1, "time": None, "data": data}},
    )


@settings(max_examples=200, deadline=None)
@given(
    secrets=st.lists(_secret, min_size=1, max_size=6),
    kinds=st.lists(st.sampled_from(["thought", "tool", "result", "delta", "message"]), max_size=6),
    reason=st.one_of(st.none(), _secret, st.fixed_dictionaries({"kind": _secret})),
)
def test_child_text_reaches_events_but_never_the_diagnostic(
    secrets: list[str], kinds: list[str], reason: object
) -> None:
    """Whatever the runtime writes into thoughts, tool titles, text or the turn end reason, the
    events may carry it (for a human) but the diagnostic is built from closed values only."""
    published: list[SubagentEvent] = []
    transcript = RunTranscript("root", sole_prompt=True, on_event=published.append)
    transcript.message_id = "m-1"
    updates = [_event("agent/inbox/spliced", {"inserted": [{"id": "m-1"}]})]
    for index, kind in enumerate(kinds):
        secret = secrets[index % len(secrets)]
        if kind == "thought":
            updates.append(
                _event("assistant/chunk", {"chunk": {"type": "reasoning-delta", "text": secret}})
            )
        elif kind == "tool":
            updates.append(_event("tool/call", {"callId": secret, "name": secret}))
        elif kind == "result":
            updates.append(_event("tool/result", {"callId": secret, "isError": True}))
        elif kind == "delta":
            updates.append(
                _event("assistant/chunk", {"chunk": {"type": "text-delta", "text": secret}})
            )
        else:
            content = [{"type": "text", "text": secret}]
            updates.append(_event("assistant/message", {"message": {"content": content}}))
    if reason is not None:
        updates.append(_event("turn/end", {"reason": reason}))
    for update in updates:
        transcript.feed(update)
    _, diagnostic = turn_end_result("dsh-sdk", transcript.turn_end)
    assert diagnostic is None or "SECRET" not in diagnostic
    shown = [
        text
        for event in published
        for text in (
            getattr(event, "text", None),
            getattr(event, "title", None),
            getattr(event, "call_id", None),
        )
    ]
    for index, kind in enumerate(kinds):
        if kind in ("thought", "tool", "delta"):
            assert secrets[index % len(secrets)] in shown
