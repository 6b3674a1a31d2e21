"""`harness fanout list`, `apply` and `report`: what is done with a run after it ended.

```
harness fanout list             _record.list_runs ─▶ one row per run, newest first
harness fanout apply [RUN] A    _record.find_run (RUN, else the newest) ─▶ its child A (a name
                                or #n) ─▶ _apply.apply_child, Ctrl-C / SIGTERM ─▶ its cancel
harness fanout report [RUN]     _record.find_run ─▶ _report.write_report ─▶ the path printed
```

What these print is closed facts, numbers, configured names and the user's own paths; the
children's file names stay in the report (escaped) and in `git status`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from rich.table import Table
from subagent_core import CancelSignal

from harness._config.paths import workspace_path
from harness._console.consoles import output_console
from harness._console.exit_codes import EXIT_INCOMPLETE, EXIT_OK, UsageError, signal_exit_code
from harness._console.ndjson import emit
from harness._console.signals import cancel_on_signals

from ._apply import Applied, ApplyInterruptedError, ApplyRefusedError, apply_child
from ._record import RecordError, RunRecord, find_run, list_runs
from ._report import write_report
from ._result import FanoutResult, by_rank
from ._view import stop_cell, verify_cell


def list_command(*, json: bool, limit: int) -> int:
    """`harness fanout list`: the newest `limit` runs, one row (or `--json` record) each."""
    records = list_runs()[:limit]
    if json:
        for record in records:
            emit(_run_json(record))
        emit({"type": "summary", "total": len(records), "exit_code": EXIT_OK})
        return EXIT_OK
    console = output_console()
    if not records:
        console.print("no fan-out run is recorded yet")
        return EXIT_OK
    table = Table(title="harness fanout runs (newest first)")
    for column in ("run", "started (UTC)", "children", "completed", "verify", "best", "workspace"):
        table.add_column(column, no_wrap=column != "workspace")
    for record in records:
        best = _best(record)
        table.add_row(
            record.run,
            record.started_at.replace("T", " ")[:19],  # to the second, for a person
            str(len(record.children)) if record.finished_at else "did not finish",
            str(sum(child.result.stop_reason == "completed" for child in record.children)),
            _verify_summary(record),
            "—" if best is None else _best_cell(best),
            record.workspace,
        )
    console.print(table)
    return EXIT_OK


def report_command(*, run: str | None, report: Path | None) -> int:
    """`harness fanout report [RUN]`: writes the run's page and prints where.

    Raises:
        UsageError: no such run.
    """
    record = _find(run)
    target = None if report is None else report.absolute()
    try:
        path = write_report(record, target)
    except OSError:
        raise UsageError(f"the report could not be written to {target or record.folder}") from None
    output_console().print(str(path), soft_wrap=True)
    return EXIT_OK


def apply_command(*, run: str | None, agent: str, workspace: Path | None) -> int:
    """`harness fanout apply [RUN] AGENT`: one child's patch into the work tree.

    Exit 0 when applied (or already there), 1 when refused (nothing changed), 130/143 when
    interrupted (nothing changed, or everything applied: the message says which).

    Raises:
        UsageError: no such run or child, or a workspace that cannot be entered.
    """
    record = _find(run)
    try:
        outcome = record.child(agent)
    except RecordError as error:
        raise UsageError(str(error)) from None
    root = workspace_path(workspace)
    return anyio.run(_apply, record, outcome, root, backend="asyncio")


async def _apply(record: RunRecord, outcome: FanoutResult, workspace: Path) -> int:
    cancel = CancelSignal()
    applied: Applied | None = None
    refusal: str | None = None
    async with cancel_on_signals(cancel) as received:
        try:
            applied = await apply_child(record, outcome, workspace, cancel)
        except ApplyRefusedError as error:
            refusal = str(error)
        except ApplyInterruptedError:
            applied = None
    who = f"#{outcome.number} {outcome.agent} of run {record.run}"
    if refusal is not None:
        _err(f"harness: not applied: {refusal}")
        return EXIT_INCOMPLETE
    code = signal_exit_code(received)
    if applied is None:
        _err(f"harness: interrupted before {who} was applied; nothing was changed")
        return code or EXIT_INCOMPLETE
    console = output_console()
    if applied.total == 0:
        console.print(f"nothing to change: the work tree already has the changes of {who}")
    else:
        console.print(
            f"applied {who}: {applied.total} {'file' if applied.total == 1 else 'files'} "
            f"({applied.added} added, {applied.modified} modified, {applied.deleted} deleted) "
            "in the work tree; the index is untouched (see git status, git diff)",
            soft_wrap=True,
        )
    if applied.interrupted or code is not None:
        _err("harness: interrupted after the patch was applied in full")
        return code or EXIT_OK
    return EXIT_OK


def _find(run: str | None) -> RunRecord:
    try:
        return find_run(run)
    except RecordError as error:
        raise UsageError(str(error)) from None


def _best(record: RunRecord) -> FanoutResult | None:
    ranked = by_rank(record.children)
    return ranked[0] if ranked else None


def _best_cell(best: FanoutResult) -> str:
    verdict = stop_cell(best) if best.verify is None else verify_cell(best)
    return f"#{best.number} {best.agent}: {verdict}"


def _verify_summary(record: RunRecord) -> str:
    if record.verify is None:
        return "—"
    passed = sum(
        child.verify is not None and child.verify.status == "pass" for child in record.children
    )
    return f"{passed}/{len(record.children)} pass"


def _run_json(record: RunRecord) -> dict[str, Any]:
    best = _best(record)
    return {
        "type": "run",
        "run": record.run,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "workspace": record.workspace,
        "isolation": record.isolation,
        "agents": list(record.agents),
        "verify": record.verify is not None,
        "children": len(record.children),
        "completed": sum(child.result.stop_reason == "completed" for child in record.children),
        "passed": sum(
            child.verify is not None and child.verify.status == "pass" for child in record.children
        ),
        "best": None if best is None else {"number": best.number, "agent": best.agent},
        "folder": str(record.folder),
    }


def _err(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
