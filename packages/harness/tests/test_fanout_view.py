"""The fan-out's cells, table and live rows: closed values and numbers, exact text."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from harness.fanout import FanoutResult, FileChange
from harness.fanout._view import LiveRows, child_record, summary_table
from rich.console import Console
from subagent_core import (
    Cost,
    MessageChunk,
    PermissionEvent,
    SubagentResult,
    ToolCallEvent,
    Usage,
    UsageEvent,
)

SECRET = "sk-child-secret"


def outcomes() -> list[FanoutResult]:
    return [
        FanoutResult(
            number=1,
            agent="claude",
            result=SubagentResult(
                stop_reason="completed",
                output=SECRET,
                usage=Usage(input_tokens=1200, output_tokens=34, cost=Cost(0.0123, "USD")),
            ),
            wall_seconds=12.34,
            files=(
                FileChange(path="a.py", added=10, deleted=2),
                FileChange(path="logo.png", added=None, deleted=None),
            ),
            patch=Path("/p/1-claude.patch"),
        ),
        FanoutResult(
            number=2,
            agent="gemini",
            result=SubagentResult(stop_reason="aborted", output=SECRET),
            wall_seconds=900.0,
            timed_out=True,
        ),
    ]


def render(table: object) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(table)
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


def test_the_table_classifies_each_child_and_never_shows_its_text() -> None:
    text = render(summary_table(outcomes(), title="t"))
    rows = [line for line in text.splitlines() if line.count("│") > 5]
    cells = [[cell.strip() for cell in row.split("│")[1:-1]] for row in rows]
    assert cells == [
        ["1", "claude", "completed", "12.3 s", "1,200 / 34", "0.0123 USD", "2 files +10 −2", "—"],
        ["2", "gemini", "aborted (timed out)", "900.0 s", "—", "—", "—", "—"],
    ]
    assert SECRET not in text


def test_json_carries_usage_and_names_places_only_when_kept() -> None:
    first = child_record(outcomes()[0], kept=False)
    assert first["usage"] == {
        "input_tokens": 1200,
        "output_tokens": 34,
        "cached_input_tokens": None,
        "cost": {"amount": 0.0123, "currency": "USD"},
    }
    assert first["files"][1] == {"path": "logo.png", "added": None, "deleted": None}
    assert (first["isolation_path"], first["branch"]) == (None, None)


def test_live_rows_follow_each_child() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=120, force_terminal=True, color_system=None)
    rows = LiveRows(["claude", "gemini"], console=console)
    rows.started(1, "claude")
    rows.event(1, ToolCallEvent(call_id="c1", title="ls", kind="execute", status="completed"))
    rows.event(1, MessageChunk(text="\x1b[2Jhi"))
    rows.event(1, UsageEvent(input_tokens=5, output_tokens=6, cost=Cost(0.5, "USD")))
    working = row_cells(rows, "claude")
    rows.event(1, ToolCallEvent(call_id="c2", title=SECRET, kind="edit", status="pending"))
    asking = row_cells(rows, "claude")
    rows.event(1, PermissionEvent(tool_kind="edit", policy="allow", decision="allow_once"))
    answered = row_cells(rows, "claude")
    rows.verifying(1)
    verifying = row_cells(rows, "claude")
    queued = row_cells(rows, "gemini")
    rows.finished(outcomes()[0])
    done = row_cells(rows, "claude")
    rows.close()
    assert working[:7] == ["1", "claude", "working", "execute", "1", "5 / 6", "0.5000 USD"]
    assert asking[2:5] == ["waiting for permission", "edit", "2"]
    assert answered[2] == "working"
    assert verifying[2] == "verifying"
    assert queued[2:] == ["queued", "—", "0", "—", "—", "—"]
    assert done[2] == "done (completed)"
    assert done[5:7] == ["1,200 / 34", "0.0123 USD"]


def row_cells(rows: LiveRows, agent: str) -> list[str]:
    rendered = render(rows._render())  # pyright: ignore[reportPrivateUsage]
    assert SECRET not in rendered
    line = next(row for row in rendered.splitlines() if agent in row)
    return [cell.strip() for cell in line.split("│")[1:-1]]


def test_patches_go_under_the_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.fanout import default_patch_dir

    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path / "state"))
    assert default_patch_dir("r1") == tmp_path / "state" / "fanout" / "r1"
    monkeypatch.delenv("HARNESS_STATE_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_patch_dir("r1") == tmp_path / "xdg" / "harness" / "fanout" / "r1"
