"""A child agent's loop events as subagent-core run events (what `SubagentRun.events()` yields).

Text, reasoning and tool titles are written by the model, so they stay child-controlled in the
core events too (a human's screen and host logs only). Kinds, statuses and exit codes come
from our own closed sets and the command's observed result.
"""

from __future__ import annotations

import json
from typing import Any, cast

from subagent_core import MessageChunk, SubagentEvent, ThoughtChunk, ToolCallEvent, ToolKind

from ._events import AgentEvent, ReasoningDelta, TextDelta, ToolEnded, ToolStarted

TITLE_CHARS = 200
"""Longest tool title published (a command or a path, cut)."""

_KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "list_directory": "read",
    "search_text": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "process_execute": "execute",
}


def core_event(event: AgentEvent) -> SubagentEvent | None:
    """The run event for one loop event, or None when runs have no such event (retries)."""
    if isinstance(event, TextDelta):
        return MessageChunk(text=event.text)
    if isinstance(event, ReasoningDelta):
        return ThoughtChunk(text=event.text)
    if isinstance(event, ToolStarted):
        return ToolCallEvent(
            call_id=event.call_id,
            kind=_KINDS.get(event.name, "other"),
            status="in_progress",
            title=tool_title(event.name, event.arguments),
        )
    if isinstance(event, ToolEnded):
        return ToolCallEvent(
            call_id=event.call_id,
            kind=_KINDS.get(event.name, "other"),
            status="failed" if event.is_error else "completed",
            exit_code=_exit_code(event),
        )
    return None


def tool_title(name: str, arguments: str) -> str:
    """What a human sees for a call: the command, `<tool> <path>`, or the tool name."""
    parsed = _object(arguments)
    if name == "process_execute" and isinstance(parsed.get("command"), str):
        title = cast(str, parsed["command"])
    elif isinstance(parsed.get("path"), str):
        title = f"{name} {parsed['path']}"
    else:
        title = name
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"


def _exit_code(event: ToolEnded) -> int | None:
    """The exit code in a `process_execute` result (our own JSON), if the command exited."""
    if event.name != "process_execute":
        return None
    code = _object(event.content).get("exitCode")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}
