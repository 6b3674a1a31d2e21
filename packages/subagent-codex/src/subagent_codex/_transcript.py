"""What a turn's stream says: item notifications → events, the output text and the usage.

Codex streams a turn as `item/started` / `item/completed` of typed items, deltas for the agent
message and the reasoning, and running token totals. The output is the last `agentMessage`
of phase `final_answer`, else the last `agentMessage`, else the deltas received, each held in
a `BoundedText` so a flooding child costs at most `max_output_bytes` per copy. The usage
codex reports is the thread's running totals; a turn's own is what they added since it began
(`usage_since`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, cast

from subagent_core import (
    MessageChunk,
    SubagentEvent,
    ThoughtChunk,
    ToolCallEvent,
    ToolKind,
    Usage,
    UsageEvent,
)
from subagent_core.kit import BoundedText, tool_call_status

_TOOL_ITEMS: Final[dict[str, ToolKind]] = {
    "commandExecution": "execute",
    "fileChange": "edit",
    "mcpToolCall": "other",
    "dynamicToolCall": "other",
    "webSearch": "fetch",
}
_ITEM_STATUS: Final = {
    "inProgress": "in_progress",
    "completed": "completed",
    "failed": "failed",
    "declined": "failed",
}


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


class Transcript:
    """One turn's output and usage, built from its notifications."""

    def __init__(self, max_output_bytes: int, publish: Callable[[SubagentEvent], None]) -> None:
        self._max = max_output_bytes
        self._publish = publish
        self._deltas = BoundedText(max_output_bytes)
        self._last: BoundedText | None = None
        self._final: BoundedText | None = None
        self.usage: Usage | None = None
        """The thread's running totals (input, cached input, output), latest report."""

    @property
    def output(self) -> str:
        """The answer so far, by the output rule above."""
        for text in (self._final, self._last):
            if text is not None:
                return text.text
        return self._deltas.text

    def on_notification(self, method: str, params: Mapping[str, object]) -> None:
        """Publishes what a stream notification says and keeps the output facts."""
        if method == "item/agentMessage/delta":
            delta = params.get("delta")
            if isinstance(delta, str) and delta:
                self._deltas.add(delta)
                self._publish(MessageChunk(text=delta))
        elif method in ("item/reasoning/summaryTextDelta", "item/reasoning/textDelta"):
            delta = params.get("delta")
            if isinstance(delta, str) and delta:
                self._publish(ThoughtChunk(text=delta))
        elif method in ("item/started", "item/completed"):
            item = params.get("item")
            if isinstance(item, dict):
                self._on_item(cast(Mapping[str, object], item), method == "item/completed")
        elif method == "thread/tokenUsage/updated":
            self._on_usage(params)

    def _on_item(self, item: Mapping[str, object], completed: bool) -> None:
        kind = item.get("type")
        if kind == "agentMessage" and completed:
            text = item.get("text")
            if isinstance(text, str):
                kept = BoundedText(self._max)
                kept.add(text)
                self._last = kept
                if item.get("phase") == "final_answer":
                    self._final = kept
            return
        if isinstance(kind, str) and kind in _TOOL_ITEMS:
            ident = item.get("id")
            status = item.get("status")
            self._publish(
                ToolCallEvent(
                    call_id=ident if isinstance(ident, str) else "",
                    kind=_TOOL_ITEMS[kind],
                    status=tool_call_status(_ITEM_STATUS.get(status, "unknown"))
                    if isinstance(status, str)
                    else None,
                    title=_title(item),
                    exit_code=_count(item.get("exitCode")) if kind == "commandExecution" else None,
                )
            )

    def _on_usage(self, params: Mapping[str, object]) -> None:
        usage = thread_totals(params)
        if usage is None:
            return
        self.usage = usage
        self._publish(UsageEvent.of(usage))


def thread_totals(params: Mapping[str, object]) -> Usage | None:
    """The running totals of a `thread/tokenUsage/updated` notification, if it has them."""
    usage = params.get("tokenUsage")
    if not isinstance(usage, dict):
        return None
    total = cast(Mapping[str, object], usage).get("total")
    if not isinstance(total, dict):
        return None
    counts = cast(Mapping[str, object], total)
    return Usage(
        input_tokens=_count(counts.get("inputTokens")),
        output_tokens=_count(counts.get("outputTokens")),
        cached_input_tokens=_count(counts.get("cachedInputTokens")),
    )


def usage_since(total: Usage | None, baseline: Usage | None) -> Usage | None:
    """What a thread's running totals added since `baseline` (each count on its own): a turn's
    part of totals that count every turn of the thread."""
    if total is None or baseline is None:
        return total

    def minus(now: int | None, before: int | None) -> int | None:
        return now if now is None or before is None else max(now - before, 0)

    return Usage(
        input_tokens=minus(total.input_tokens, baseline.input_tokens),
        output_tokens=minus(total.output_tokens, baseline.output_tokens),
        cached_input_tokens=minus(total.cached_input_tokens, baseline.cached_input_tokens),
    )


def _title(item: Mapping[str, object]) -> str | None:
    """Untrusted display text for an event (never for a diagnostic)."""
    for key in ("command", "tool", "query"):
        value = item.get(key)
        if isinstance(value, str):
            return value
    return None
