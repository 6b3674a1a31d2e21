"""The built-in workspace tools: read, list and search in both modes; write and edit in Execute.

Every path goes through `resolve_inside` (realpath confinement). File work runs in a worker
thread so a slow disk never blocks the event loop. Results are plain text for the model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from ._tool import RequestContext, ToolOutcome
from ._workspace import PathRejected, relative_name, resolve_inside

READ_FILE = "read_file"
LIST_DIRECTORY = "list_directory"
SEARCH_TEXT = "search_text"
WRITE_FILE = "write_file"
EDIT_FILE = "edit_file"

READ_LIMIT_BYTES = 256 * 1024
"""Most bytes of one file shown to the model; longer files are cut with a notice."""
LIST_LIMIT = 1000
SEARCH_MATCH_LIMIT = 200
SEARCH_FILE_LIMIT_BYTES = 2 * 1024 * 1024
SEARCH_LINE_CHARS = 300
_SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv"})


def _string(arguments: Mapping[str, Any], name: str, *, default: str | None = None) -> str:
    value = arguments.get(name, default)
    if not isinstance(value, str):
        raise PathRejected(f"argument {name!r} must be a string")
    return value


def _error(message: str) -> ToolOutcome:
    return ToolOutcome(message, is_error=True)


def _regular_file(path: Path) -> ToolOutcome | None:
    """The refusal for a path that is not an existing regular file, else None."""
    if path.is_file():
        return None
    return _error("no such file" if not path.exists() else "not a regular file")


class _WorkspaceTool:
    """A workspace tool: `work` runs in a worker thread, so a slow disk never blocks the loop.

    A refused path or argument (`PathRejected`, fixed text) becomes the tool error.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]

    async def call(self, arguments: Mapping[str, Any], context: RequestContext) -> ToolOutcome:
        return await anyio.to_thread.run_sync(self._guarded, context.workspace, arguments)

    def _guarded(self, root: Path, arguments: Mapping[str, Any]) -> ToolOutcome:
        try:
            return self.work(root, arguments)
        except PathRejected as error:
            return _error(str(error))

    def work(self, root: Path, arguments: Mapping[str, Any]) -> ToolOutcome:
        raise NotImplementedError


class ReadFileTool(_WorkspaceTool):
    """Reads a text file of the workspace (undecodable bytes become U+FFFD)."""

    name = READ_FILE
    description = "Read a text file of the workspace. `path` is relative to the workspace root."
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "File path, relative."}},
        "required": ["path"],
        "additionalProperties": False,
    }

    def work(self, root: Path, arguments: Mapping[str, Any]) -> ToolOutcome:
        path = resolve_inside(root, _string(arguments, "path"))
        refusal = _regular_file(path)
        if refusal is not None:
            return refusal
        try:
            with path.open("rb") as file:
                data = file.read(READ_LIMIT_BYTES + 1)
        except OSError:
            return _error("the file cannot be read")
        text = data[:READ_LIMIT_BYTES].decode("utf-8", errors="replace")
        if len(data) > READ_LIMIT_BYTES:
            text += f"\n[… file longer than {READ_LIMIT_BYTES} bytes; the rest is omitted …]"
        return ToolOutcome(text)


class ListDirectoryTool(_WorkspaceTool):
    """Lists a directory of the workspace; directories end with `/`."""

    name = LIST_DIRECTORY
    description = "List a directory of the workspace (default: the root). Directories end with '/'."
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Directory, relative."}},
        "additionalProperties": False,
    }

    def work(self, root: Path, arguments: Mapping[str, Any]) -> ToolOutcome:
        path = resolve_inside(root, _string(arguments, "path", default="."))
        if not path.is_dir():
            return _error("no such directory" if not path.exists() else "not a directory")
        try:
            entries = sorted(os.scandir(path), key=lambda entry: entry.name)
        except OSError:
            return _error("the directory cannot be listed")
        names = [entry.name + ("/" if entry.is_dir() else "") for entry in entries[:LIST_LIMIT]]
        if len(entries) > LIST_LIMIT:
            names.append(f"[… {len(entries) - LIST_LIMIT} more entries omitted …]")
        return ToolOutcome("\n".join(names) if names else "(empty directory)")


class SearchTextTool(_WorkspaceTool):
    """Finds lines containing a plain substring in the workspace's text files."""

    name = SEARCH_TEXT
    description = (
        "Search the workspace's text files for a plain substring. Returns `path:line: text` "
        "lines. `path` (optional) limits the search to a file or directory."
    )
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Text to find (not a regex)."},
            "path": {"type": "string", "description": "File or directory, relative."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def work(self, root: Path, arguments: Mapping[str, Any]) -> ToolOutcome:
        pattern = _string(arguments, "pattern")
        start = resolve_inside(root, _string(arguments, "path", default="."))
        if not pattern:
            return _error("argument 'pattern' must not be empty")
        if not start.exists():
            return _error("no such file or directory")
        matches: list[str] = []
        for file in _walk(root, start):
            try:
                if file.stat().st_size > SEARCH_FILE_LIMIT_BYTES:
                    continue
                data = file.read_bytes()
            except OSError:
                continue
            if b"\x00" in data[:8192]:
                continue
            text = data.decode("utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), start=1):
                if pattern in line:
                    shown = (
                        line if len(line) <= SEARCH_LINE_CHARS else line[:SEARCH_LINE_CHARS] + "…"
                    )
                    matches.append(f"{relative_name(root, file)}:{number}: {shown}")
                    if len(matches) >= SEARCH_MATCH_LIMIT:
                        matches.append(f"[… stopped after {SEARCH_MATCH_LIMIT} matches …]")
                        return ToolOutcome("\n".join(matches))
        return ToolOutcome("\n".join(matches) if matches else "no matches")


def _walk(root: Path, start: Path) -> list[Path]:
    """Files under `start` in name order; symlinks are not followed out of the workspace."""
    if start.is_file():
        return [start]
    found: list[Path] = []
    for directory, subdirectories, files in os.walk(start, followlinks=False):
        subdirectories[:] = sorted(d for d in subdirectories if d not in _SKIPPED_DIRECTORIES)
        for name in sorted(files):
            candidate = Path(directory) / name
            real = Path(os.path.realpath(candidate))
            if real.is_file() and (real == root or root in real.parents):
                found.append(candidate)
    return found


class WriteFileTool(_WorkspaceTool):
    """Creates or replaces a text file of the workspace (Execute mode only)."""

    name = WRITE_FILE
    description = (
        "Create or overwrite a text file of the workspace with `content` (parent directories "
        "are created)."
    )
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative."},
            "content": {"type": "string", "description": "The complete new file content."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    def work(self, root: Path, arguments: Mapping[str, Any]) -> ToolOutcome:
        path = resolve_inside(root, _string(arguments, "path"))
        content = _string(arguments, "content")
        if path.is_dir():
            return _error("the path is a directory")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Re-check after creating parents: a racing symlink must not carry the write out.
            resolve_inside(root, relative_name(root, path))
            data = content.encode("utf-8")
            path.write_bytes(data)
        except OSError:
            return _error("the file cannot be written")
        return ToolOutcome(f"wrote {len(data)} bytes to {relative_name(root, path)}")


class EditFileTool(_WorkspaceTool):
    """Replaces one exact occurrence of a text in a workspace file (Execute mode only)."""

    name = EDIT_FILE
    description = (
        "Replace exactly one occurrence of `old_text` with `new_text` in a text file of the "
        "workspace. Fails when `old_text` occurs zero or several times."
    )
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative."},
            "old_text": {"type": "string", "description": "Exact text to replace."},
            "new_text": {"type": "string", "description": "Replacement text."},
        },
        "required": ["path", "old_text", "new_text"],
        "additionalProperties": False,
    }

    def work(self, root: Path, arguments: Mapping[str, Any]) -> ToolOutcome:
        path = resolve_inside(root, _string(arguments, "path"))
        old = _string(arguments, "old_text")
        new = _string(arguments, "new_text")
        if not old:
            return _error("argument 'old_text' must not be empty")
        refusal = _regular_file(path)
        if refusal is not None:
            return refusal
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            return _error("the file is not UTF-8 text")
        except OSError:
            return _error("the file cannot be read")
        count = text.count(old)
        if count != 1:
            return _error(f"old_text occurs {count} times; it must occur exactly once")
        try:
            path.write_bytes(text.replace(old, new, 1).encode("utf-8"))
        except OSError:
            return _error("the file cannot be written")
        return ToolOutcome(f"edited {relative_name(root, path)}")
