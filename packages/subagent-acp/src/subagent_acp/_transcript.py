"""A turn's transcript: `session/update` → `subagent_core` events, its output and usage.

Closed fields (tool kind, status, plan priority and status) are normalised by the event types.
A tool call status the child named outside the ACP set, which the schema reads as "no status",
arrives marked by the transport (`StatusOutsideSet`) and is `unknown`. Text, titles, call ids
and plan content stay child-controlled and go only to the run's event buffer, never to the
result's diagnostic.

Usage comes from two places, and a turn reports its own part of each:

- the `session/prompt` answer's `usage`: the turn's tokens (ACP's `PromptResponse.usage` is
  "token usage for this turn"; claude-agent-acp resets its tally as each turn begins), taken
  as they are;
- `usage_update` notifications: their `cost` is the cumulative session cost, so a turn's cost
  is what it added since the child's previous report (`cost_before`, the child's last counted
  figure; a report in another currency counts whole). A fresh child counts from nothing: an
  agent that restarts its figure in a new process (Claude's `total_cost_usd` does) is counted
  exactly, one that carries it over from a resumed session counts that first figure once more
  (more, never less, against a budget). Their `used`/`size` describe the context window, not
  tokens spent, and are not kept.

A reported cost passes `subagent_core.kit.safe_cost`: an invalid amount or currency is no cost,
never a failed run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    PlanItems,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
)
from acp.schema import PlanEntry as ACPPlanEntry
from acp.schema import Usage as ACPUsage
from subagent_core import (
    Cost,
    MessageChunk,
    PlanEntry,
    PlanEvent,
    SubagentEvent,
    ThoughtChunk,
    ToolCallEvent,
    ToolCallStatus,
    Usage,
    UsageEvent,
)
from subagent_core.kit import BoundedText, safe_cost

from ._wire import SessionUpdate, StatusOutsideSet


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
    if isinstance(update, ToolCallStart | ToolCallProgress):
        return ToolCallEvent(
            call_id=update.tool_call_id,
            kind=update.kind,
            status=_status(update),
            title=update.title,
        )
    if isinstance(update, AgentPlanUpdate):
        return _plan(update.entries)
    if isinstance(update, AgentPlanContentUpdate) and isinstance(update.plan, PlanItems):
        return _plan(update.plan.entries)
    return None


class UsageTally:
    """One turn's usage as the child reported it: its tokens and its part of the cost."""

    __slots__ = ("_before", "_cost", "_tokens", "reported_cost")

    def __init__(self, cost_before: Cost | None = None) -> None:
        self._before = cost_before
        self._tokens: ACPUsage | None = None
        self._cost: Cost | None = None
        self.reported_cost: Cost | None = cost_before
        """The child's cumulative cost as last validly reported (the next turn counts from it)."""

    def note_update(self, update: UsageUpdate) -> UsageEvent | None:
        """A `usage_update`: the event for a cost it carries, or `None` (no valid cost)."""
        reported = update.cost
        if reported is None:
            return None
        cost = safe_cost(reported.amount, reported.currency)
        if cost is not None:
            self.reported_cost = cost
        self._cost = None if cost is None else _since(cost, self._before)
        return None if self._cost is None else self.event()

    def note_answer(self, usage: ACPUsage | None) -> UsageEvent | None:
        """The `session/prompt` answer's usage: the event for the turn's totals, or `None`."""
        if usage is None:
            return None
        self._tokens = usage
        return self.event()

    def event(self) -> UsageEvent:
        tokens = self._tokens
        if tokens is None:
            return UsageEvent(cost=self._cost)
        return UsageEvent(
            input_tokens=tokens.input_tokens,
            output_tokens=tokens.output_tokens,
            cached_input_tokens=tokens.cached_read_tokens,
            cost=self._cost,
        )

    def usage(self) -> Usage | None:
        """The turn's `Usage` (its counts as the event normalised them), or `None` when the
        child reported neither tokens nor a cost."""
        if self._tokens is None and self._cost is None:
            return None
        return self.event().usage


class Transcript:
    """What one turn's updates and answer say: events, the output text, the usage.

    Only `agent_message_chunk` text is output (bounded by `max_output_bytes`); every watched
    update becomes an event through `publish` (the turn's, which drops what comes after it
    settled).
    """

    __slots__ = ("_output", "_publish", "_usage")

    def __init__(
        self,
        max_output_bytes: int,
        publish: Callable[[SubagentEvent], None],
        *,
        cost_before: Cost | None = None,
    ) -> None:
        self._output = BoundedText(max_output_bytes)
        self._usage = UsageTally(cost_before)
        self._publish = publish

    @property
    def output(self) -> str:
        return self._output.text

    @property
    def usage(self) -> Usage | None:
        return self._usage.usage()

    @property
    def reported_cost(self) -> Cost | None:
        """The child's cumulative cost as last validly reported."""
        return self._usage.reported_cost

    def on_update(self, update: SessionUpdate) -> None:
        """One `session/update` of the turn, in arrival order."""
        event = (
            self._usage.note_update(update)
            if isinstance(update, UsageUpdate)
            else event_for(update)
        )
        if event is not None:
            self._publish(event)
        if isinstance(event, MessageChunk):
            self._output.add(event.text)

    def on_answer(self, usage: ACPUsage | None) -> None:
        """The `session/prompt` answer's usage (published before the turn settles)."""
        event = self._usage.note_answer(usage)
        if event is not None:
            self._publish(event)


def _since(cost: Cost, before: Cost | None) -> Cost:
    """What a cumulative cost added since `before` (whole when there is none to compare)."""
    if before is None or before.currency != cost.currency:
        return cost
    # Rounded: a difference of decimal amounts carries binary noise no currency has.
    return Cost(max(round(cost.amount - before.amount, 12), 0.0), cost.currency)


def _status(update: ToolCallStart | ToolCallProgress) -> ToolCallStatus | None:
    """The update's status; `unknown` for one the child named outside the ACP set."""
    return "unknown" if isinstance(update, StatusOutsideSet) else update.status


def _plan(entries: Iterable[ACPPlanEntry]) -> PlanEvent:
    return PlanEvent(
        entries=tuple(
            PlanEntry(content=entry.content, priority=entry.priority, status=entry.status)
            for entry in entries
        )
    )
