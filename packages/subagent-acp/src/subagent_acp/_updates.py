"""`session/update` → `subagent_core` run events.

Closed fields (tool kind, status, plan priority and status) are normalised by the event types;
text, titles, call ids and plan content stay child-controlled and go only to the run's event
buffer, never to the result's diagnostic.
"""

from __future__ import annotations

from collections.abc import Iterable

from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    PlanItems,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)
from acp.schema import PlanEntry as ACPPlanEntry
from acp.schema import Usage as ACPUsage
from subagent_core import (
    MessageChunk,
    PlanEntry,
    PlanEvent,
    SubagentEvent,
    ThoughtChunk,
    ToolCallEvent,
    UsageEvent,
)

from ._transport import SessionUpdate


def event_for(update: SessionUpdate) -> SubagentEvent | None:
    """The event one update stands for, or `None` for kinds a parent does not watch.

    Watched: message and thought text, tool calls and their updates, and item plans. User
    message echoes, non-text content, mode/command/config/session-info updates, file or
    markdown plans and plan removals are ignored.
    """
    if isinstance(update, AgentMessageChunk):
        content = update.content
        return MessageChunk(text=content.text) if isinstance(content, TextContentBlock) else None
    if isinstance(update, AgentThoughtChunk):
        content = update.content
        return ThoughtChunk(text=content.text) if isinstance(content, TextContentBlock) else None
    if isinstance(update, ToolCallStart):
        return ToolCallEvent(
            call_id=update.tool_call_id, kind=update.kind, status=update.status, title=update.title
        )
    if isinstance(update, ToolCallProgress):
        return ToolCallEvent(
            call_id=update.tool_call_id, kind=update.kind, status=update.status, title=update.title
        )
    if isinstance(update, AgentPlanUpdate):
        return _plan(update.entries)
    if isinstance(update, AgentPlanContentUpdate) and isinstance(update.plan, PlanItems):
        return _plan(update.plan.entries)
    return None


def usage_event(usage: ACPUsage | None) -> UsageEvent | None:
    """The turn's token counts from a `session/prompt` answer, when the child reported them."""
    if usage is None:
        return None
    return UsageEvent(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)


def _plan(entries: Iterable[ACPPlanEntry]) -> PlanEvent:
    return PlanEvent(
        entries=tuple(
            PlanEntry(content=entry.content, priority=entry.priority, status=entry.status)
            for entry in entries
        )
    )
