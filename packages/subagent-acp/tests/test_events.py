"""Run events: every `session/update` kind mapped in order, permissions as events, bounded,
optional to consume, and child text in them never reaching a diagnostic."""

from __future__ import annotations

import json

import anyio
import psutil
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from subagent_acp import ACPProvider
from subagent_core import (
    EventsDropped,
    MessageChunk,
    PermissionEvent,
    PlanEntry,
    PlanEvent,
    SubagentEvent,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
    ThoughtChunk,
    ToolCallEvent,
    ToolCallStatus,
    Usage,
    UsageEvent,
)

MB = 1024 * 1024


def text_update(kind: str, text: str) -> dict[str, object]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


EVERY_KIND: list[dict[str, object]] = [
    text_update("user_message_chunk", "an echo of the prompt"),
    text_update("agent_thought_chunk", "thinking"),
    {
        "sessionUpdate": "tool_call",
        "toolCallId": "call-1",
        "title": "Read notes.txt",
        "kind": "read",
        "status": "pending",
    },
    {"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "in_progress"},
    {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call-1",
        "status": "completed",
        "kind": "not-a-kind",
        "title": "Read notes.txt (done)",
    },
    {
        "sessionUpdate": "plan",
        "entries": [
            {"content": "look", "priority": "high", "status": "completed"},
            {"content": "write", "priority": "low", "status": "pending"},
        ],
    },
    {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "image", "data": "AA==", "mimeType": "image/png"},
    },
    {"sessionUpdate": "available_commands_update", "availableCommands": []},
    {"sessionUpdate": "current_mode_update", "currentModeId": "code"},
    {"sessionUpdate": "usage_update", "used": 10, "size": 100},
    {"sessionUpdate": "something_from_the_future", "x": 1},
    text_update("agent_message_chunk", "Hello, "),
]

EXPECTED: list[SubagentEvent] = [
    ThoughtChunk(text="thinking"),
    ToolCallEvent(call_id="call-1", kind="read", status="pending", title="Read notes.txt"),
    ToolCallEvent(call_id="call-1", status="in_progress"),
    # A kind outside the ACP set is `other` (the child named one); only an absent kind is `None`.
    ToolCallEvent(
        call_id="call-1", kind="other", status="completed", title="Read notes.txt (done)"
    ),
    PlanEvent(
        entries=(
            PlanEntry(content="look", priority="high", status="completed"),
            PlanEntry(content="write", priority="low", status="pending"),
        )
    ),
    MessageChunk(text="Hello, "),
    PermissionEvent(tool_kind="execute", policy="reject", decision="cancelled"),
    MessageChunk(text="[permission cancelled]"),
    MessageChunk(text="wor"),
    MessageChunk(text="ld"),
    UsageEvent(input_tokens=12, output_tokens=34),
]

SCRIPT = {
    "updates": EVERY_KIND,
    "permission": {"tool_kind": "execute"},
    "text": "world",
    "chunks": 2,
    "usage": {"totalTokens": 46, "inputTokens": 12, "outputTokens": 34},
}

RESULT = SubagentResult(
    stop_reason="completed",
    output="Hello, [permission cancelled]world",
    diagnostic="ACP permission (policy: reject; tool kind: execute; decision: cancelled)",
    usage=Usage(input_tokens=12, output_tokens=34),
)


async def run_collecting(config, *, consume: bool) -> tuple[SubagentResult, list[SubagentEvent]]:
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    events: list[SubagentEvent] = []
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        async with run:
            if consume:
                async with anyio.create_task_group() as tg:

                    async def collect() -> None:
                        async for event in run.events():
                            events.append(event)

                    tg.start_soon(collect)
                    result = await run.result()
            else:
                result = await run.result()
    return result, events


async def test_every_update_kind_maps_to_the_exact_event_sequence(make_config) -> None:
    result, events = await run_collecting(make_config(SCRIPT), consume=True)
    assert events == EXPECTED
    assert result == RESULT


async def test_the_result_is_the_same_whether_or_not_events_are_read(make_config) -> None:
    read, _ = await run_collecting(make_config(SCRIPT), consume=True)
    unread, _ = await run_collecting(make_config(SCRIPT), consume=False)
    assert read == unread == RESULT


async def test_events_read_after_settling_are_all_there_and_end(make_config) -> None:
    registry = SubagentRegistry()
    registry.register(ACPProvider(make_config(SCRIPT)))
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        async with run:
            assert await run.result() == RESULT
            events = [event async for event in run.events()]
    assert events == EXPECTED


async def test_granted_permissions_are_events_too(make_config) -> None:
    config = make_config({"permission": {"tool_kind": "edit"}}, permission="allow")
    _, events = await run_collecting(config, consume=True)
    assert events == [
        PermissionEvent(tool_kind="edit", policy="allow", decision="allow_once"),
        MessageChunk(text="[permission selected allow]"),
    ]


def tool_status(session_update: str, call_id: str, status: object) -> dict[str, object]:
    update: dict[str, object] = {"sessionUpdate": session_update, "toolCallId": call_id}
    if session_update == "tool_call":
        update["title"] = "t"
    if status is not ...:
        update["status"] = status
    return update


async def test_a_tool_call_status_outside_the_acp_set_is_unknown(make_config) -> None:
    """The schema reads an out-of-set status as none; the event says `unknown` instead.

    Only a status the child did not state (absent or `null`) stays `None`.
    """
    statuses: list[tuple[str, object]] = [
        ("named-unknown", "teleporting"),
        ("named-non-string", 7),
        ("named-null", None),
        ("absent", ...),
        ("known", "failed"),
    ]
    updates = [
        tool_status(session_update, call_id, status)
        for session_update in ("tool_call", "tool_call_update")
        for call_id, status in statuses
    ]
    _, events = await run_collecting(make_config({"updates": updates}), consume=True)
    expected: list[tuple[str, ToolCallStatus | None]] = [
        ("named-unknown", "unknown"),
        ("named-non-string", "unknown"),
        ("named-null", None),
        ("absent", None),
        ("known", "failed"),
    ]
    assert [event for event in events if isinstance(event, ToolCallEvent)] == [
        ToolCallEvent(call_id=call_id, status=status, title=title)
        for title in ("t", None)
        for call_id, status in expected
    ]


async def test_a_consumer_that_never_reads_costs_a_bounded_buffer(make_config) -> None:
    """100k updates unread: bounded memory, then one `EventsDropped` with the right count."""
    count = 100_000
    process = psutil.Process()
    base = process.memory_info().rss
    peak = 0
    registry = SubagentRegistry()
    registry.register(ACPProvider(make_config({"text": "x" * count, "chunks": count})))
    with anyio.fail_after(120):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        async with run:
            async with anyio.create_task_group() as tg:

                async def sample() -> None:
                    nonlocal peak
                    while True:
                        peak = max(peak, process.memory_info().rss - base)
                        await anyio.sleep(0.005)

                tg.start_soon(sample)
                result = await run.result()
                tg.cancel_scope.cancel()
            events = [event async for event in run.events()]
    assert result == SubagentResult(stop_reason="completed", output="x" * count)
    assert events[0] == EventsDropped(count=count - 1024)
    assert events[1:] == [MessageChunk(text="x")] * 1024
    assert peak <= 32 * MB


MARK = "ZQXJ"
child_text = st.text(max_size=200).map(lambda text: f"{MARK}{text}")
generated_update = st.one_of(
    child_text.map(lambda text: text_update("agent_thought_chunk", text)),
    child_text.map(lambda text: text_update("agent_message_chunk", text)),
    st.builds(
        lambda title, kind, status: {
            "sessionUpdate": "tool_call",
            "toolCallId": f"{MARK}-id",
            "title": title,
            "kind": kind,
            "status": status,
        },
        child_text,
        st.one_of(st.sampled_from(["read", "edit", "execute"]), child_text),
        st.one_of(st.sampled_from(["pending", "completed"]), child_text),
    ),
    st.builds(
        lambda content: {
            "sessionUpdate": "plan",
            "entries": [{"content": content, "priority": "high", "status": "pending"}],
        },
        child_text,
    ),
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    updates=st.lists(generated_update, min_size=1, max_size=6),
    stop_reason=st.one_of(
        st.sampled_from(["end_turn", "refusal", "max_turn_requests"]), child_text
    ),
    permission=st.booleans(),
)
async def test_child_text_reaches_events_but_never_a_diagnostic(
    make_config, in_grammar, updates, stop_reason, permission
) -> None:
    script: dict[str, object] = json.loads(
        json.dumps({"updates": updates, "stop_reason": stop_reason})
    )
    if permission:
        script["permission"] = {"tool_kind": "execute", "title": f"{MARK} title"}
    try:
        result, events = await run_collecting(make_config(script), consume=True)
    except SubagentStartError as error:  # pragma: no cover - the handshake is not scripted here
        raise AssertionError(str(error)) from error
    assert in_grammar(result.diagnostic)
    assert MARK not in (result.diagnostic or "")
    # The child's text did arrive, as events: at least one per watched update.
    assert any(MARK in repr(event) for event in events)
