"""How tool calls look in an editor: kinds, titles, locations, diffs, bounds."""

from __future__ import annotations

import json
from pathlib import Path

from harness._agent_servers.tool_views import MAX_TITLE_CHARS, cut, describe


def test_a_command_is_titled_by_itself_and_bounded(tmp_path: Path) -> None:
    view = describe("process_execute", json.dumps({"command": "ls  -la\n/tmp"}), tmp_path)
    assert (view.kind, view.title) == ("execute", "ls -la /tmp")
    long = describe("process_execute", json.dumps({"command": "x" * 500}), tmp_path)
    assert len(long.title) == MAX_TITLE_CHARS


def test_a_write_shows_a_diff_against_the_current_file(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n", encoding="utf-8")
    view = describe("write_file", json.dumps({"path": "a.txt", "content": "new\n"}), tmp_path)
    assert view.kind == "edit"
    assert view.paths == (str(tmp_path / "a.txt"),)
    assert view.diff is not None
    assert (view.diff.old_text, view.diff.new_text) == ("old\n", "new\n")
    fresh = describe("write_file", json.dumps({"path": "b.txt", "content": "x"}), tmp_path)
    assert fresh.diff is not None
    assert fresh.diff.old_text is None


def test_an_edit_shows_its_snippets_and_a_read_its_location(tmp_path: Path) -> None:
    edit = describe(
        "edit_file",
        json.dumps({"path": "a.py", "old_text": "a = 1", "new_text": "a = 2"}),
        tmp_path,
    )
    assert edit.diff is not None
    assert (edit.diff.old_text, edit.diff.new_text) == (
        "a = 1",
        "a = 2",
    )
    read = describe("read_file", json.dumps({"path": "src/x.py"}), tmp_path)
    assert (read.kind, read.title, read.paths) == (
        "read",
        "Read src/x.py",
        (str(tmp_path / "src" / "x.py"),),
    )


def test_bad_arguments_and_unknown_tools_still_have_a_view(tmp_path: Path) -> None:
    assert describe("process_execute", "{not json", tmp_path).title == "process_execute"
    assert describe("mcp__tool", "{}", tmp_path).kind == "other"
    assert describe("subagent_delegate", json.dumps({"description": "kid"}), tmp_path).title == (
        "Subagent: kid"
    )


def test_cut_marks_what_it_cuts() -> None:
    from subagent_core.kit import OUTPUT_TRUNCATION_MARKER

    assert cut("abc", 5) == "abc"
    assert cut("x" * 100, 20) == "x" * 20 + OUTPUT_TRUNCATION_MARKER


def test_child_activity_is_bounded_and_lists_the_latest_tools() -> None:
    from harness._agent_servers.tool_views import (
        MAX_CHILD_TEXT_CHARS,
        MAX_CHILD_TOOL_LINES,
        ChildActivity,
    )

    activity = ChildActivity("kid")
    activity.add_text("a" * MAX_CHILD_TEXT_CHARS)
    activity.add_text("tail")
    assert len(activity.text) == MAX_CHILD_TEXT_CHARS
    assert activity.text.endswith("tail")
    for index in range(MAX_CHILD_TOOL_LINES + 3):
        activity.tool(f"c{index}", f"cmd {index}", "in_progress")
    activity.tool("c3", "cmd 3", "completed")
    lines = activity.render(with_text=False).splitlines()
    assert lines[0] == "Subagent: kid"
    assert len(lines) == 1 + MAX_CHILD_TOOL_LINES
    assert lines[1] == "- cmd 3 (completed)"
    assert lines[-1] == f"- cmd {MAX_CHILD_TOOL_LINES + 2} (in_progress)"


def test_a_delegate_call_with_children_names_each(tmp_path: Path) -> None:
    arguments = {"children": [{"task": "t", "description": "left"}, {"task": "t"}, "junk"]}
    view = describe("subagent_delegate", json.dumps(arguments), tmp_path)
    assert (view.kind, view.title) == ("think", "Subagents (3): left, subagent, subagent")
