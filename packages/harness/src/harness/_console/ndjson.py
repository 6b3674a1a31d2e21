"""The `--json` output: one JSON object per line (NDJSON), flushed as each is known.

Every object has a `type`; the schemas are in the package README ("Machine-readable output").
Child-controlled fields (`text`, `title`, `call_id`, plan `content`, `output`) are passed
through for the reader; they are never mixed into `diagnostic`, which stays safe text.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from subagent_core import (
    EventsDropped,
    MessageChunk,
    PermissionEvent,
    PlanEvent,
    SubagentEvent,
    SubagentResult,
    ThoughtChunk,
    ToolCallEvent,
    UsageEvent,
)

from .usage import cost_record, usage_record


def emit(record: dict[str, Any]) -> None:
    """Writes one NDJSON line to stdout and flushes it (never wrapped, never coloured)."""
    sys.stdout.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def event_record(event: SubagentEvent) -> dict[str, Any]:
    """One run event as its JSON object."""
    if isinstance(event, MessageChunk):
        return {"type": "message", "text": event.text}
    if isinstance(event, ThoughtChunk):
        return {"type": "thought", "text": event.text}
    if isinstance(event, ToolCallEvent):
        return {
            "type": "tool_call",
            "call_id": event.call_id,
            "kind": event.kind,
            "status": event.status,
            "title": event.title,
            "exit_code": event.exit_code,
        }
    if isinstance(event, PlanEvent):
        return {
            "type": "plan",
            "entries": [
                {"content": entry.content, "priority": entry.priority, "status": entry.status}
                for entry in event.entries
            ],
        }
    if isinstance(event, PermissionEvent):
        return {
            "type": "permission",
            "tool_kind": event.tool_kind,
            "policy": event.policy,
            "decision": event.decision,
        }
    if isinstance(event, UsageEvent):
        return {
            "type": "usage",
            "input_tokens": event.input_tokens,
            "output_tokens": event.output_tokens,
            "cached_input_tokens": event.cached_input_tokens,
            "cost": cost_record(event.cost),
        }
    assert isinstance(event, EventsDropped)
    return {"type": "events_dropped", "count": event.count}


def result_record(
    provider: str,
    result: SubagentResult,
    *,
    teardown: str | None,
    exit_code: int,
    timed_out: bool = False,
    start_failure: str | None = None,
) -> dict[str, Any]:
    """The final object of `delegate --json`."""
    return {
        "type": "result",
        "provider": provider,
        "stop_reason": result.stop_reason,
        "output": result.output,
        "structured_output": result.structured_output,
        "diagnostic": result.diagnostic,
        "start_failure": start_failure,
        "teardown": teardown,
        "timed_out": timed_out,
        "usage": usage_record(result.usage),
        "exit_code": exit_code,
    }
