"""How `harness delegate` shows a run while it works: live, plain, or NDJSON.

- On a terminal (`LiveView`): a rich live region on stderr with a spinner, the streaming
  answer's last lines and one line per tool call with its status; tool lines stay on screen.
- Not a terminal (`PlainView`): one plain stderr line per tool call, plan, permission or drop.
- `--json` (`JSONView`): one NDJSON object per event on stdout, then the result object.

In the first two the child's final output goes to stdout once, after the run: a script reading
stdout gets the answer and nothing else. Child-written text is for the screen only and is
stripped of control characters first (`_console.screen`), so it cannot drive the terminal.
"""

from __future__ import annotations

import sys
from typing import Protocol

from rich.console import Console, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text
from subagent_core import (
    EventsDropped,
    MessageChunk,
    PermissionEvent,
    PlanEvent,
    SubagentEvent,
    ThoughtChunk,
    ToolCallEvent,
    UsageEvent,
)

from harness._console.ndjson import emit, event_record
from harness._console.screen import screen_text

_TAIL_LINES = 8
_STATUS_STYLE = {"completed": "green", "failed": "red", "in_progress": "yellow"}


class RunView(Protocol):
    """Receives a run's events as they arrive."""

    def show(self, event: SubagentEvent) -> None: ...

    def close(self) -> None: ...


class JSONView:
    """One NDJSON object per event on stdout."""

    def show(self, event: SubagentEvent) -> None:
        emit(event_record(event))

    def close(self) -> None:
        pass


class ToolCalls:
    """Merges a call's updates: an update that omits the title or kind keeps the earlier one."""

    def __init__(self) -> None:
        self._known: dict[str, ToolCallEvent] = {}

    def merge(self, event: SubagentEvent) -> SubagentEvent:
        if not isinstance(event, ToolCallEvent):
            return event
        before = self._known.get(event.call_id)
        if before is not None:
            event = ToolCallEvent(
                call_id=event.call_id,
                kind=event.kind or before.kind,
                status=event.status or before.status,
                title=event.title or before.title,
                exit_code=event.exit_code if event.exit_code is not None else before.exit_code,
            )
        if len(self._known) < 10_000 or event.call_id in self._known:  # bounded memory
            self._known[event.call_id] = event
        return event


class PlainView:
    """Plain stderr lines, for logs and pipes; the answer itself waits for the result."""

    def __init__(self, *, show_thinking: bool) -> None:
        self._show_thinking = show_thinking
        self._calls = ToolCalls()

    def show(self, event: SubagentEvent) -> None:
        event = self._calls.merge(event)
        line = _describe(event)
        if isinstance(event, ThoughtChunk) and self._show_thinking:
            sys.stderr.write(screen_text(event.text))
        elif line is not None:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        pass


class LiveView:
    """A rich live region on stderr: spinner, streaming answer tail, one line per tool call."""

    def __init__(self, *, show_thinking: bool, console: Console | None = None) -> None:
        self._console = console or Console(stderr=True, highlight=False)
        self._show_thinking = show_thinking
        self._answer = ""
        self._thought = ""
        self._status = "waiting for the child"
        self._calls = ToolCalls()
        self._live = Live(
            self._render(), console=self._console, refresh_per_second=10, transient=True
        )
        self._live.start()

    def show(self, event: SubagentEvent) -> None:
        event = self._calls.merge(event)
        if isinstance(event, MessageChunk):
            self._answer += screen_text(event.text)
            self._status = "answering"
        elif isinstance(event, ThoughtChunk):
            self._thought += screen_text(event.text)
            self._status = "thinking"
        else:
            line = _describe(event)
            if line is not None:
                style = ""
                if isinstance(event, ToolCallEvent):
                    style = _STATUS_STYLE.get(event.status or "", "")
                    self._status = "working"
                self._live.console.print(Text(line, style=style))
        self._live.update(self._render())

    def close(self) -> None:
        self._live.stop()

    def _render(self) -> Group:
        parts: list[Spinner | Text] = [Spinner("dots", text=Text(self._status, style="dim"))]
        if self._show_thinking and self._thought:
            parts.append(Text(_tail(self._thought), style="dim italic"))
        if self._answer:
            parts.append(Text(_tail(self._answer)))
        return Group(*parts)


def _tail(text: str) -> str:
    return "\n".join(text.splitlines()[-_TAIL_LINES:])


def _describe(event: SubagentEvent) -> str | None:
    """One plain line for an event, or None for streamed text (shown elsewhere)."""
    if isinstance(event, ToolCallEvent):
        title = screen_text(event.title) if event.title else "(untitled)"
        kind = event.kind or "other"
        status = event.status or "pending"
        code = "" if event.exit_code is None else f" (exit code {event.exit_code})"
        return f"tool {status}: {title} [{kind}]{code}"
    if isinstance(event, PlanEvent):
        done = sum(entry.status == "completed" for entry in event.entries)
        return f"plan: {done}/{len(event.entries)} steps done"
    if isinstance(event, PermissionEvent):
        return f"permission: {event.tool_kind or 'other'} → {event.decision} ({event.policy})"
    if isinstance(event, UsageEvent):
        return None
    if isinstance(event, EventsDropped):
        return f"({event.count} events dropped: the display fell behind)"
    return None
