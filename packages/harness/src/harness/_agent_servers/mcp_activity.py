"""What a run of `harness mcp` is doing, in closed facts: state, time, tool calls by kind, tokens.

A run's events are the child's; only their closed parts are kept here (a tool call's kind,
token counts), never a text, title, id or path. Progress notifications and
`delegate_status` are built from this alone, so nothing the child wrote can reach them:

    running · 3 tool calls (2 read, 1 edit) · 41 s · 1,204 tokens
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal

import anyio
from subagent_core import SubagentEvent, ToolCallEvent, UsageEvent

from .mcp_schemas import TOOL_KINDS

State = Literal["queued", "running", "settled"]

MAX_TRACKED_CALLS: Final = 10_000
"""Distinct tool calls whose kind is remembered; past it a new call still counts, as `other`."""
PROGRESS_INTERVAL_SECONDS: Final = 10.0
"""A progress notification at least this often while a call runs (the bound promised is 15 s)."""
PROGRESS_MIN_GAP_SECONDS: Final = 1.0
"""Notifications that a new tool call prompts come at most this often."""


class Activity:
    """One run's closed facts, updated from its events."""

    def __init__(self) -> None:
        self.state: State = "queued"
        self.started = anyio.current_time()
        self._calls: dict[str, str] = {}
        self._overflow = 0
        self._tokens: int | None = None
        self._changed = anyio.Event()

    def running(self) -> None:
        """The run has its slot and its child is being started."""
        self.state = "running"
        self._changed.set()

    def settled(self) -> None:
        self.state = "settled"
        self._changed.set()

    def observe(self, event: SubagentEvent) -> None:
        """Counts a tool call (by the kind it last stated) or takes the running token totals."""
        if isinstance(event, ToolCallEvent):
            self._call(event)
        elif isinstance(event, UsageEvent):
            counts = [n for n in (event.input_tokens, event.output_tokens) if n is not None]
            if counts:
                self._tokens = sum(counts)

    def _call(self, event: ToolCallEvent) -> None:
        known = self._calls.get(event.call_id)
        if known is None and len(self._calls) >= MAX_TRACKED_CALLS:
            self._overflow += 1
            self._changed.set()
            return
        kind = event.kind or known or "other"
        self._calls[event.call_id] = kind
        if known is None:
            self._changed.set()

    @property
    def elapsed_seconds(self) -> float:
        return max(anyio.current_time() - self.started, 0.0)

    @property
    def tokens(self) -> int | None:
        """Input plus output tokens so far, as the child reported them (None: none reported)."""
        return self._tokens

    def by_kind(self) -> dict[str, int]:
        """Tool calls per kind, in the vocabulary's order."""
        counts = dict.fromkeys(TOOL_KINDS, 0)
        for kind in self._calls.values():
            counts[kind if kind in counts else "other"] += 1
        counts["other"] += self._overflow
        return {kind: count for kind, count in counts.items() if count}

    def status(self) -> dict[str, Any]:
        """`state`, `elapsed_seconds`, `tool_calls` and `tokens`, as the status tools show them."""
        by_kind = self.by_kind()
        return {
            "state": self.state,
            "elapsed_seconds": round(self.elapsed_seconds, 3),
            "tool_calls": {"total": sum(by_kind.values()), "by_kind": by_kind},
            "tokens": self._tokens,
        }

    def message(self) -> str:
        """`running · 3 tool calls (2 read, 1 edit) · 41 s · 1,204 tokens` (closed words only)."""
        by_kind = self.by_kind()
        total = sum(by_kind.values())
        parts = [self.state]
        if self.state != "queued":
            calls = f"{total} tool call{'' if total == 1 else 's'}"
            if by_kind:
                calls += " (" + ", ".join(f"{n} {kind}" for kind, n in by_kind.items()) + ")"
            parts.append(calls)
        parts.append(f"{int(self.elapsed_seconds)} s")
        if self._tokens is not None:
            parts.append(f"{self._tokens:,} tokens")
        return " · ".join(parts)

    async def changed(self) -> None:
        """Returns at the next change worth telling (a state, a new tool call)."""
        await self._changed.wait()
        self._changed = anyio.Event()


Report = Callable[[float, str], Awaitable[None]]
"""Sends one progress notification: `(progress, message)`."""


async def report_progress(
    activity: Activity, report: Report, *, interval_seconds: float = PROGRESS_INTERVAL_SECONDS
) -> None:
    """Reports `activity` at once, then at every change (at most one a second) and at least
    every `interval_seconds`, until cancelled. `progress` counts the notifications, so it
    always increases."""
    sent = 0
    last = -float("inf")
    while True:
        now = anyio.current_time()
        if now - last >= PROGRESS_MIN_GAP_SECONDS or sent == 0:
            sent += 1
            last = now
            await report(float(sent), activity.message())
        with anyio.move_on_after(interval_seconds):
            await activity.changed()
            # A burst of tool calls makes one notification, not one each.
            await anyio.sleep(max(0.0, last + PROGRESS_MIN_GAP_SECONDS - anyio.current_time()))
