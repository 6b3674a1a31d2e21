"""Tool kinds the child names and the per-kind policy, over real stdio with the fake child.

A kind outside the ACP set is `other` in events and in the permission line; only a request or
update that names no kind keeps `None` in its event. A per-kind policy decides each request by
its kind, within one run.
"""

from __future__ import annotations

import anyio
from subagent_acp import ACPProvider
from subagent_core import (
    MessageChunk,
    PermissionEvent,
    SubagentEvent,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    ToolCallEvent,
)


async def run_collecting(config) -> tuple[SubagentResult, list[SubagentEvent]]:
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    events: list[SubagentEvent] = []
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        async with run, anyio.create_task_group() as tg:

            async def collect() -> None:
                async for event in run.events():
                    events.append(event)

            tg.start_soon(collect)
            result = await run.result()
    return result, events


def tool_call(call_id: str, kind: object) -> dict[str, object]:
    update: dict[str, object] = {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": "t"}
    if kind is not ...:
        update["kind"] = kind
    return update


async def test_unknown_tool_kinds_are_other_in_events_and_line(make_config) -> None:
    script = {
        "updates": [
            tool_call("named-unknown", "teleport"),
            tool_call("named-non-string", 42),
            tool_call("named-null", None),
            tool_call("absent", ...),
            tool_call("known", "fetch"),
        ],
        "permission": {"tool_kind": "teleport"},
    }
    result, events = await run_collecting(make_config(script))
    assert [event for event in events if isinstance(event, ToolCallEvent)] == [
        ToolCallEvent(call_id="named-unknown", kind="other", title="t"),
        ToolCallEvent(call_id="named-non-string", kind="other", title="t"),
        ToolCallEvent(call_id="named-null", kind=None, title="t"),
        ToolCallEvent(call_id="absent", kind=None, title="t"),
        ToolCallEvent(call_id="known", kind="fetch", title="t"),
    ]
    assert PermissionEvent(tool_kind="other", policy="reject", decision="cancelled") in events
    assert result.stop_reason == "completed"
    assert result.diagnostic == (
        "ACP permission (policy: reject; tool kind: other; decision: cancelled)"
    )


async def test_a_permission_request_naming_no_kind_keeps_none_in_its_event(make_config) -> None:
    _, events = await run_collecting(make_config({"permission": {}}))
    assert PermissionEvent(tool_kind=None, policy="reject", decision="cancelled") in events


async def test_a_per_kind_policy_allows_a_read_and_refuses_an_execute(make_config) -> None:
    script = {"permission": [{"tool_kind": "read"}, {"tool_kind": "execute"}]}
    config = make_config(script, permission={"read": "allow", "*": "reject"})
    result, events = await run_collecting(config)
    assert events == [
        PermissionEvent(tool_kind="read", policy="allow", decision="allow_once"),
        MessageChunk(text="[permission selected allow]"),
        PermissionEvent(tool_kind="execute", policy="reject", decision="cancelled"),
        MessageChunk(text="[permission cancelled]"),
    ]
    assert result == SubagentResult(
        stop_reason="completed",
        output="[permission selected allow][permission cancelled]",
        diagnostic="ACP permission (policy: reject; tool kind: execute; decision: cancelled)",
    )


async def test_a_per_kind_policy_without_a_default_refuses_other_kinds(make_config) -> None:
    script = {
        "permission": [{"tool_kind": "search"}, {"tool_kind": "edit"}],
        "stop_reason": "refusal",
    }
    config = make_config(script, permission={"search": "allow"})
    result, _ = await run_collecting(config)
    assert result == SubagentResult(
        stop_reason="refusal",
        output="[permission selected allow][permission cancelled]",
        diagnostic="ACP permission (policy: reject; tool kind: edit; decision: cancelled)",
    )
