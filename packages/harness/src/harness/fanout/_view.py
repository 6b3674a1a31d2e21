"""How `harness fanout` shows its children: live rows while they run, then one table.

- On a terminal (`LiveRows`): a rich live table on stderr, one row per child (its status,
  elapsed time, tool calls, tokens so far), redrawn as events arrive; gone when the fan-out ends.
- Not a terminal (`PlainRows`): one stderr line when a child starts and one when it ends.
- At the end `summary_table` on stdout: agent, stop reason, wall time, tokens, cost, files
  changed (+/−), diagnostic; `--json` prints `child_record`s and a `summary_record` instead.

Every cell is built from closed values, numbers, configured names and safe diagnostics; the
only child-written text anywhere is the JSON `output` and file paths, passed through for the
reader like `delegate --json`'s.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text
from subagent_core import MessageChunk, SubagentEvent, ThoughtChunk, ToolCallEvent, UsageEvent

from ._run import FanoutResult

_STOP_STYLE = {"completed": "green", "aborted": "yellow", "error": "red"}


def tokens_cell(outcome: FanoutResult) -> str:
    """`in / out` tokens, `—` when the child reported none."""
    usage = outcome.result.usage
    if usage is None or (usage.input_tokens is None and usage.output_tokens is None):
        return "—"
    return f"{_count(usage.input_tokens)} / {_count(usage.output_tokens)}"


def cost_cell(outcome: FanoutResult) -> str:
    """The child's reported cost, `—` when it reported none."""
    cost = cost_of(outcome)
    if cost is None:
        return "—"
    amount, currency = cost
    return f"{amount:.4f} {currency}"


def cost_of(outcome: FanoutResult) -> tuple[float, str] | None:
    """`(amount, currency)` of the child's usage, when its provider reports a cost."""
    usage = outcome.result.usage
    if usage is None or usage.cost is None:
        return None
    return usage.cost.amount, usage.cost.currency


def files_cell(outcome: FanoutResult) -> str:
    """`N files +A −D`, `—` when nothing changed, `unreadable` when git could not say."""
    if outcome.changes_error is not None:
        return "unreadable"
    if not outcome.files:
        return "—"
    count = len(outcome.files)
    noun = "file" if count == 1 else "files"
    return f"{count} {noun} +{outcome.lines_added} −{outcome.lines_deleted}"


def stop_cell(outcome: FanoutResult) -> str:
    """The stop reason, with `(timed out)` when the fan-out's deadline stopped the child."""
    reason = outcome.result.stop_reason
    if outcome.timed_out:
        return f"{reason} (timed out)"
    if outcome.start_failure is not None:
        return f"{reason} (did not start)"
    return reason


def summary_table(outcomes: list[FanoutResult], *, title: str) -> Table:
    """The comparison: one row per child, in the order the agents were given."""
    table = Table(title=title)
    for column in ("#", "agent", "stop reason", "wall", "tokens in / out", "cost", "files"):
        table.add_column(column, no_wrap=column != "agent")
    table.add_column("diagnostic")
    for outcome in outcomes:
        style = _STOP_STYLE.get(outcome.result.stop_reason, "")
        table.add_row(
            str(outcome.number),
            outcome.agent,
            Text(stop_cell(outcome), style=style),
            f"{outcome.wall_seconds:.1f} s",
            tokens_cell(outcome),
            cost_cell(outcome),
            files_cell(outcome),
            outcome.result.diagnostic or "—",
        )
    return table


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


class _Row:
    """What the live view knows of one child."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.status = "waiting"
        self.started: float | None = None
        self.ended: float | None = None
        self.tools: set[str] = set()
        self.tokens = "—"


class PlainRows:
    """One stderr line when a child starts and one when it ends (logs and pipes)."""

    def started(self, number: int, agent: str) -> None:
        _err(f"fanout: #{number} {agent} started")

    def event(self, number: int, event: SubagentEvent) -> None:
        pass

    def finished(self, outcome: FanoutResult) -> None:
        _err(
            f"fanout: #{outcome.number} {outcome.agent} {stop_cell(outcome)} after "
            f"{outcome.wall_seconds:.1f} s, {files_cell(outcome) if outcome.files else 'no file changed'}"
        )

    def close(self) -> None:
        pass


class LiveRows:
    """A rich live table on stderr, one row per child, redrawn as its events arrive."""

    def __init__(self, agents: list[str], *, console: Console | None = None) -> None:
        import time

        self._clock = time.monotonic
        self._rows = [_Row(agent) for agent in agents]
        self._console = console or Console(stderr=True, highlight=False)
        self._live = Live(
            self._render(),
            console=self._console,
            refresh_per_second=4,
            transient=True,
            get_renderable=self._render,
        )
        self._live.start()

    def started(self, number: int, agent: str) -> None:
        row = self._rows[number - 1]
        row.status, row.started = "starting", self._clock()

    def event(self, number: int, event: SubagentEvent) -> None:
        row = self._rows[number - 1]
        if isinstance(event, MessageChunk):
            row.status = "answering"
        elif isinstance(event, ThoughtChunk):
            row.status = "thinking"
        elif isinstance(event, ToolCallEvent):
            row.status = "working"
            if len(row.tools) < 10_000:  # bounded memory
                row.tools.add(event.call_id)
        elif isinstance(event, UsageEvent):
            row.tokens = f"{_count(event.input_tokens)} / {_count(event.output_tokens)}"

    def finished(self, outcome: FanoutResult) -> None:
        row = self._rows[outcome.number - 1]
        row.status, row.ended = stop_cell(outcome), self._clock()
        row.tokens = tokens_cell(outcome)

    def close(self) -> None:
        self._live.stop()

    def _render(self) -> Table:
        table = Table(title="fan-out", expand=False)
        for column in ("#", "agent", "status", "elapsed", "tools", "tokens in / out"):
            table.add_column(column, no_wrap=True)
        now = self._clock()
        for number, row in enumerate(self._rows, start=1):
            elapsed = "—"
            if row.started is not None:
                elapsed = f"{(row.ended or now) - row.started:.1f} s"
            table.add_row(
                str(number), row.agent, row.status, elapsed, str(len(row.tools)), row.tokens
            )
        return table


def child_record(outcome: FanoutResult, *, kept: bool) -> dict[str, Any]:
    """One child as its `--json` object (`output` and file paths are child-written).

    Its worktree or copy and branch are named only when `kept` (otherwise they are gone).
    """
    usage = outcome.result.usage
    usage_record: dict[str, Any] | None = None
    if usage is not None:
        cost = cost_of(outcome)
        usage_record = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cached_input_tokens": usage.cached_input_tokens,
            "cost": None if cost is None else {"amount": cost[0], "currency": cost[1]},
        }
    record: dict[str, Any] = {
        "type": "child",
        "number": outcome.number,
        "agent": outcome.agent,
        "stop_reason": outcome.result.stop_reason,
        "output": outcome.result.output,
        "structured_output": outcome.result.structured_output,
        "diagnostic": outcome.result.diagnostic,
        "timed_out": outcome.timed_out,
        "start_failure": outcome.start_failure,
        "teardown": outcome.teardown,
        "wall_seconds": round(outcome.wall_seconds, 3),
        "usage": usage_record,
        "files": [
            {"path": change.path, "added": change.added, "deleted": change.deleted}
            for change in outcome.files
        ],
        "lines_added": outcome.lines_added,
        "lines_deleted": outcome.lines_deleted,
        "patch": None if outcome.patch is None else str(outcome.patch),
        "changes_error": outcome.changes_error,
        "isolation_path": str(outcome.isolation_path) if kept and outcome.isolation_path else None,
        "branch": outcome.branch if kept else None,
    }
    if outcome.session is not None:
        record["session"] = outcome.session
    return record


def _err(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
