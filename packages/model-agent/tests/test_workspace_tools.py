"""Workspace tools stay inside the workspace by realpath; Ask can never write."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from model_agent._workspace_tools import (
    EditFileTool,
    ListDirectoryTool,
    ReadFileTool,
    SearchTextTool,
    WriteFileTool,
)
from model_agent.tools import RequestContext
from subagent_core import CancelSignal


def context(workspace: Path, mode: str = "execute") -> RequestContext:
    return RequestContext(
        runtime="model",
        mode=mode,  # type: ignore[arg-type]
        space="local",
        depth=0,
        workspace=Path(os.path.realpath(workspace)),
        workspace_identity=(0, 0),
        shell=None,
        tool_names=(),
        cancel=CancelSignal(),
    )


@pytest.fixture
def project(workspace: Path, tmp_path: Path) -> Path:
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("print('hello')\nvalue = 42\n", "utf-8")
    (workspace / "notes.txt").write_text("hello notes\n", "utf-8")
    (workspace / "blob.bin").write_bytes(b"\x00hello\xff")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("hello secret\n", "utf-8")
    if sys.platform != "win32":
        (workspace / "escape").symlink_to(outside)
        (workspace / "escape-file").symlink_to(outside / "secret.txt")
        (workspace / "inside-link").symlink_to(workspace / "notes.txt")
    return workspace


async def call(tool: Any, workspace: Path, **arguments: Any) -> tuple[str, bool]:
    outcome = await tool.call(arguments, context(workspace))
    return outcome.content, outcome.is_error


async def test_read_list_and_search_work_inside(project: Path) -> None:
    assert await call(ReadFileTool(), project, path="src/main.py") == (
        "print('hello')\nvalue = 42\n",
        False,
    )
    assert await call(ListDirectoryTool(), project) == (
        "blob.bin\nescape/\nescape-file\ninside-link\nnotes.txt\nsrc/",
        False,
    )
    assert await call(SearchTextTool(), project, pattern="hello") == (
        "inside-link:1: hello notes\nnotes.txt:1: hello notes\nsrc/main.py:1: print('hello')",
        False,
    )
    assert await call(SearchTextTool(), project, pattern="42", path="src") == (
        "src/main.py:2: value = 42",
        False,
    )
    assert await call(SearchTextTool(), project, pattern="absent") == ("no matches", False)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../outside/secret.txt", "path must not contain '..'"),
        ("src/../../outside/secret.txt", "path must not contain '..'"),
        ("src\\..\\notes.txt", "path must not contain '..'"),
        ("/etc/passwd", "path must be relative to the workspace"),
        ("C:/Windows/win.ini", "path must be relative to the workspace"),
        ("escape/secret.txt", "path leaves the workspace"),
        ("escape-file", "path leaves the workspace"),
        ("", "path must not be empty"),
    ],
)
@pytest.mark.parametrize(
    "tool", [ReadFileTool(), ListDirectoryTool(), WriteFileTool()], ids=["read", "list", "write"]
)
async def test_paths_leaving_the_workspace_are_refused(
    project: Path, path: str, message: str, tool: Any
) -> None:
    arguments: dict[str, Any] = {"path": path, "content": "pwned"}
    outcome = await tool.call(arguments, context(project))
    assert (outcome.content, outcome.is_error) == (message, True)
    assert (project.parent / "outside" / "secret.txt").read_text("utf-8") == "hello secret\n"


async def test_search_never_follows_a_symlink_out(project: Path) -> None:
    content, _ = await call(SearchTextTool(), project, pattern="secret")
    assert content == "no matches"
    assert await call(SearchTextTool(), project, pattern="x", path="escape") == (
        "path leaves the workspace",
        True,
    )


async def test_a_symlink_inside_the_workspace_is_followed(project: Path) -> None:
    assert await call(ReadFileTool(), project, path="inside-link") == ("hello notes\n", False)


async def test_write_and_edit(project: Path) -> None:
    assert await call(WriteFileTool(), project, path="new/dir/f.txt", content="one two") == (
        "wrote 7 bytes to new/dir/f.txt",
        False,
    )
    assert await call(
        EditFileTool(), project, path="new/dir/f.txt", old_text="two", new_text="2"
    ) == (
        "edited new/dir/f.txt",
        False,
    )
    assert (project / "new" / "dir" / "f.txt").read_text("utf-8") == "one 2"
    assert await call(EditFileTool(), project, path="notes.txt", old_text="zzz", new_text="") == (
        "old_text occurs 0 times; it must occur exactly once",
        True,
    )


async def test_bad_arguments_and_missing_files(project: Path) -> None:
    assert await call(ReadFileTool(), project, path="nope.txt") == ("no such file", True)
    assert await call(ReadFileTool(), project, path="src") == ("not a regular file", True)
    assert await call(ReadFileTool(), project, path=3) == ("argument 'path' must be a string", True)
    assert await call(ListDirectoryTool(), project, path="notes.txt") == ("not a directory", True)
    content, is_error = await call(ReadFileTool(), project, path="blob.bin")
    assert (content, is_error) == ("\x00hello\ufffd", False)
