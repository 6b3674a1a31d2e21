"""`harness sessions` as a table or as JSON: names, agents, workspaces and figures only.

A record also holds the child's own session id; it is child-controlled text and is never shown.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.table import Table
from subagent_core import SessionRecord, list_records

from harness._console.consoles import output_console
from harness._console.ndjson import emit
from harness._console.usage import cost_text, usage_record


def print_sessions(root: Path, *, json: bool) -> None:
    """Prints the kept sessions under `root`, most recently used first."""
    records = list_records(root)
    if json:
        for record in records:
            emit(_session_record(record))
        return
    console = output_console()
    if not records:
        console.print("no kept sessions (start one with `harness delegate --session NAME …`)")
        return
    table = Table(title="sessions")
    for column in ("name", "agent", "workspace", "turns", "tokens", "cost", "last used"):
        table.add_column(column)
    for record in records:
        usage = record.usage
        tokens = "-"
        if usage is not None and (usage.input_tokens, usage.output_tokens) != (None, None):
            tokens = f"{usage.input_tokens or 0} in, {usage.output_tokens or 0} out"
        cost = "-" if usage is None or usage.cost is None else cost_text(usage.cost)
        table.add_row(
            record.label or record.handle,
            record.provider,
            record.cwd or "-",
            str(record.turns),
            tokens,
            cost,
            _ago(record.last_used),
        )
    console.print(table)


def _session_record(record: SessionRecord) -> dict[str, object]:
    return {
        "type": "session",
        "name": record.label,
        "handle": record.handle,
        "agent": record.provider,
        "workspace": record.cwd,
        "turns": record.turns,
        "usage": usage_record(record.usage),
        "last_used": record.last_used,
    }


def _ago(moment: float) -> str:
    seconds = max(time.time() - moment, 0.0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"
