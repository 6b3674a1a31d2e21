"""How `harness fanout` shows its children: live rows while they run, then one table.

- On a terminal (`LiveRows`): a rich live table on stderr, one row per child: its state
  (queued, starting, working, waiting for permission, verifying, done), the kind of its
  current tool call, tool calls so far, tokens, cost and elapsed time, redrawn as events
  arrive; gone when the fan-out ends.
- Not a terminal (`PlainRows`): one stderr line when a child starts, when its verify starts,
  and when it ends.
- At the end `summary_table` on stdout, best first (`FanoutResult.rank`): agent, stop reason,
  verify outcome (with `--verify`), wall time, tokens, cost, files changed (+/−), diagnostic;
  `--json` prints `child_record`s and a summary instead.

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
from subagent_core import PermissionEvent, SubagentEvent, ToolCallEvent, UsageEvent

from ._result import FanoutResult, by_rank

_STOP_STYLE = {"completed": "green", "aborted": "yellow", "error": "red"}
_VERIFY_STYLE = {"pass": "green", "fail": "red", "timeout": "yellow", "tampered": "bold red"}
_LIVE_TOOL_CALLS = 10_000
"""Tool calls a live row remembers by id (bounded memory; the count stops there)."""


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


def verify_cell(outcome: FanoutResult) -> str:
    """`pass`, `fail (exit 1)`, `timeout`, `tampered`, …; `—` when the check did not run."""
    return "—" if outcome.verify is None else outcome.verify.cell


def summary_table(outcomes: list[FanoutResult], *, title: str, verify: bool = False) -> Table:
    """The comparison: one row per child, best first (by rank); a `verify` column with it."""
    table = Table(title=title)
    columns = ["#", "agent", "stop reason"]
    if verify:
        columns.append("verify")
    columns += ["wall", "tokens in / out", "cost", "files"]
    for column in columns:
        table.add_column(column, no_wrap=column != "agent")
    table.add_column("diagnostic")
    for outcome in by_rank(outcomes):
        style = _STOP_STYLE.get(outcome.result.stop_reason, "")
        cells: list[str | Text] = [
            str(outcome.number),
            outcome.agent,
            Text(stop_cell(outcome), style=style),
        ]
        if verify:
            status = outcome.verify.status if outcome.verify is not None else ""
            cells.append(Text(verify_cell(outcome), style=_VERIFY_STYLE.get(status, "")))
        cells += [
            f"{outcome.wall_seconds:.1f} s",
            tokens_cell(outcome),
            cost_cell(outcome),
            files_cell(outcome),
            outcome.result.diagnostic or "—",
        ]
        table.add_row(*cells)
    return table


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


class _Row:
    """What the live view knows of one child: closed facts and counts only."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.state = "queued"
        self.started: float | None = None
        self.ended: float | None = None
        self.tools: set[str] = set()
        self.tool_kind = "—"
        self.pending: str | None = None
        """The tool call that is pending (awaiting approval, in ACP's words), if any."""
        self.tokens = "—"
        self.cost = "—"

    def see(self, event: SubagentEvent) -> None:
        """Takes one event's closed facts (never its text)."""
        if isinstance(event, ToolCallEvent):
            if len(self.tools) < _LIVE_TOOL_CALLS:
                self.tools.add(event.call_id)
            if event.kind is not None:
                self.tool_kind = event.kind
            if event.status == "pending":
                self.pending = event.call_id
            elif event.status is not None and event.call_id == self.pending:
                self.pending = None
        elif isinstance(event, PermissionEvent):
            self.pending = None
        elif isinstance(event, UsageEvent):
            self.tokens = f"{_count(event.input_tokens)} / {_count(event.output_tokens)}"
            if event.cost is not None:
                self.cost = f"{event.cost.amount:.4f} {event.cost.currency}"
        if self.state in ("starting", "working", "waiting for permission"):
            self.state = "working" if self.pending is None else "waiting for permission"


class PlainRows:
    """One stderr line when a child starts, verifies and ends (logs and pipes)."""

    def started(self, number: int, agent: str) -> None:
        _err(f"fanout: #{number} {agent} started")

    def event(self, number: int, event: SubagentEvent) -> None:
        pass

    def verifying(self, number: int) -> None:
        _err(f"fanout: #{number} verifying")

    def finished(self, outcome: FanoutResult) -> None:
        changed = files_cell(outcome) if outcome.files else "no file changed"
        verified = "" if outcome.verify is None else f", verify {verify_cell(outcome)}"
        _err(
            f"fanout: #{outcome.number} {outcome.agent} {stop_cell(outcome)} after "
            f"{outcome.wall_seconds:.1f} s, {changed}{verified}"
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
        row.state, row.started = "starting", self._clock()

    def event(self, number: int, event: SubagentEvent) -> None:
        self._rows[number - 1].see(event)

    def verifying(self, number: int) -> None:
        row = self._rows[number - 1]
        row.state, row.pending = "verifying", None

    def finished(self, outcome: FanoutResult) -> None:
        row = self._rows[outcome.number - 1]
        done = stop_cell(outcome)
        if outcome.verify is not None:
            done += f", {verify_cell(outcome)}"
        row.state, row.ended = f"done ({done})", self._clock()
        row.tokens, row.cost = tokens_cell(outcome), cost_cell(outcome)
        row.pending = None

    def close(self) -> None:
        self._live.stop()

    def _render(self) -> Table:
        table = Table(title="fan-out", expand=False)
        columns = ("#", "agent", "state", "tool", "tool calls", "tokens in / out", "cost")
        for column in (*columns, "elapsed"):
            table.add_column(column, no_wrap=True)
        now = self._clock()
        for number, row in enumerate(self._rows, start=1):
            elapsed = "—"
            if row.started is not None:
                elapsed = f"{(row.ended or now) - row.started:.1f} s"
            table.add_row(
                str(number),
                row.agent,
                row.state,
                row.tool_kind,
                str(len(row.tools)),
                row.tokens,
                row.cost,
                elapsed,
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
        "rank": outcome.rank,
        "verify": verify_record(outcome),
    }
    if outcome.session is not None:
        record["session"] = outcome.session
    return record


def verify_record(outcome: FanoutResult) -> dict[str, Any] | None:
    """The verify's closed facts for `--json`: status, exit code or signal, seconds, how many
    protected files there were and how many the child changed, the log's path. Never the
    command's output, nor the names of the files the child changed."""
    verify = outcome.verify
    if verify is None:
        return None
    return {
        "status": verify.status,
        "exit_code": verify.exit_code,
        "signal": verify.signal,
        "seconds": round(verify.seconds, 3),
        "protected": verify.protected,
        "protected_changed": len(verify.tampered),
        "start_failure": verify.start_failure,
        "log": None if verify.log is None else str(verify.log),
    }


def _err(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
