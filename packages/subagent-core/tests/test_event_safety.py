"""Child-written event text never reaches a diagnostic, whatever the child sends."""

from __future__ import annotations

from typing import get_args

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st
from subagent_core import (
    NO_CAPABILITIES,
    MessageChunk,
    PermissionDecision,
    PermissionEvent,
    PermissionPolicy,
    PlanEntry,
    PlanEntryPriority,
    PlanEntryStatus,
    PlanEvent,
    SubagentEvent,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    ThoughtChunk,
    ToolCallEvent,
    ToolCallStatus,
    ToolKind,
    foreground_text,
    job_outcome,
)
from subagent_core.kit import EventBuffer, failure_line, new_run_id, permission_line

SECRET = "s3cr3t-\u2063child"  # no vocabulary word contains it

child_text = st.text(max_size=30).map(lambda t: t + SECRET)
# Raw vocabulary values from the child: a real word sometimes, hostile text otherwise.
raw_word = (
    st.sampled_from(
        [
            *get_args(ToolKind),
            *get_args(ToolCallStatus),
            *get_args(PermissionPolicy),
            *get_args(PermissionDecision),
        ]
    )
    | child_text
)


@st.composite
def hostile_events(draw: st.DrawFn) -> SubagentEvent:
    choice = draw(st.integers(min_value=0, max_value=4))
    if choice == 0:
        return MessageChunk(text=draw(child_text))
    if choice == 1:
        return ThoughtChunk(text=draw(child_text))
    if choice == 2:
        return ToolCallEvent(
            call_id=draw(child_text),
            kind=draw(raw_word),  # type: ignore[arg-type]
            status=draw(raw_word),  # type: ignore[arg-type]
            title=draw(child_text),
        )
    if choice == 3:
        entries = draw(
            st.lists(
                st.builds(PlanEntry, content=child_text, priority=raw_word, status=raw_word),
                max_size=3,
            )
        )
        return PlanEvent(entries=tuple(entries))
    return PermissionEvent(
        tool_kind=draw(raw_word),  # type: ignore[arg-type]
        policy=draw(raw_word),  # type: ignore[arg-type]
        decision=draw(raw_word),  # type: ignore[arg-type]
    )


@settings(max_examples=300, deadline=None)
@given(event=hostile_events())
def test_vocabulary_fields_of_any_event_are_closed_and_free_of_child_text(
    event: SubagentEvent,
) -> None:
    if isinstance(event, ToolCallEvent):
        assert event.kind in get_args(ToolKind)
        assert event.status in get_args(ToolCallStatus)
        facts = [event.kind, event.status]
    elif isinstance(event, PlanEvent):
        facts = [field for e in event.entries for field in (e.priority, e.status)]
        assert all(e.priority in get_args(PlanEntryPriority) for e in event.entries)
        assert all(e.status in get_args(PlanEntryStatus) for e in event.entries)
    elif isinstance(event, PermissionEvent):
        line = permission_line("ACP", event.policy, event.tool_kind, event.decision)
        assert SECRET not in line
        facts = [event.tool_kind, event.policy, event.decision, line]
    else:
        facts = []
    assert all(SECRET not in str(fact) for fact in facts)


class _HostileRun(SubagentRun):
    """Publishes child-written events, then fails with a diagnostic built from their facts."""

    def __init__(self, events: list[SubagentEvent]) -> None:
        self.id = new_run_id()
        self._events = EventBuffer(capacity=8)
        self._facts: list[PermissionEvent] = []
        for event in events:
            self._events.publish(event)
            if isinstance(event, PermissionEvent):
                self._facts.append(event)
        self._events.close()

    async def result(self) -> SubagentResult:
        lines = [failure_line("hostile", "prompt", "unknown")]
        lines += [
            permission_line("ACP", e.policy, e.tool_kind, e.decision) for e in self._facts[-1:]
        ]
        return SubagentResult(stop_reason="error", output="", diagnostic="\n".join(lines))

    async def dispose(self) -> str | None:
        return None


class _Provider:
    name = "hostile"
    capabilities = NO_CAPABILITIES
    inherits_parent_context = False

    def __init__(self, run: SubagentRun) -> None:
        self._run = run

    async def start(self, request: SubagentRequest) -> SubagentRun:
        return self._run


@settings(max_examples=100, deadline=None)
@given(events=st.lists(hostile_events(), min_size=1, max_size=12))
def test_events_carry_the_child_text_but_no_diagnostic_or_presentation_does(
    events: list[SubagentEvent],
) -> None:
    async def main() -> tuple[list[SubagentEvent], SubagentResult]:
        registry = SubagentRegistry()
        registry.register(_Provider(_HostileRun(events)))
        with anyio.fail_after(5):
            async with await registry.start("hostile", SubagentRequest(prompt="p")) as run:
                seen = [event async for event in run.events()]
                return seen, await run.result()

    seen, result = anyio.run(main, backend="asyncio")
    if any(isinstance(e, MessageChunk | ThoughtChunk) for e in events[-8:]):
        assert any(SECRET in getattr(e, "text", "") for e in seen)  # the human sees it
    assert result.diagnostic is not None
    assert SECRET not in result.diagnostic
    assert SECRET not in foreground_text(result).text
    outcome = job_outcome(result)
    assert SECRET not in outcome.status_line
    assert SECRET not in (outcome.detail or "")
