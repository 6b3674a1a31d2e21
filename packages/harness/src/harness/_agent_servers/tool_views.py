"""How the agent's tool calls look in an editor: ACP kind, title, locations and content.

Titles, diffs and outputs hold text the model wrote: they are for the person's screen (and
host logs), never for a diagnostic. Everything shown is bounded.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from subagent_core.kit import BoundedText

ToolKind = Literal["read", "edit", "search", "execute", "think", "other"]

MAX_TITLE_CHARS = 120
MAX_OUTPUT_BYTES = 16 * 1024
"""A finished call's output shown in the editor is cut to this (the model saw its own bound)."""
MAX_DIFF_FILE_BYTES = 256 * 1024
"""A file larger than this is shown as a write without its old text."""

ASKS_APPROVAL = frozenset({"process_execute", "write_file", "edit_file", "subagent_delegate"})
"""The calls an Execute session asks the client about before running them."""

_KINDS: dict[str, ToolKind] = {
    "process_execute": "execute",
    "subagent_delegate": "think",
    "read_file": "read",
    "list_directory": "read",
    "search_text": "search",
    "write_file": "edit",
    "edit_file": "edit",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Diff:
    """A file change to show: the path (absolute), old text (None: a new file), new text."""

    path: str
    old_text: str | None
    new_text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolView:
    """A tool call as an editor shows it."""

    kind: ToolKind
    title: str
    paths: tuple[str, ...] = ()
    diff: Diff | None = None
    arguments: dict[str, Any] | None = None


def tool_kind(name: str) -> ToolKind:
    """The ACP kind of one of the agent's tools (`other` for unknown tools)."""
    return _KINDS.get(name, "other")


def cut(text: str, max_bytes: int = MAX_OUTPUT_BYTES) -> str:
    """`text` bounded to `max_bytes` UTF-8 bytes, marked where cut (core's one output bound)."""
    return BoundedText(max_bytes).add(text)


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_TITLE_CHARS else line[: MAX_TITLE_CHARS - 1] + "…"


def _arguments(raw: str) -> dict[str, Any] | None:
    try:
        value: object = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return None
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _text(arguments: dict[str, Any], key: str) -> str | None:
    value = arguments.get(key)
    return value if isinstance(value, str) else None


def _absolute(workspace: Path, path: str) -> str:
    return os.path.normpath(workspace / path)


def describe(name: str, raw_arguments: str, workspace: Path) -> ToolView:
    """The view of a call of `name` with the model's raw JSON arguments.

    Reads the current text of a file about to be overwritten (bounded) for the diff.
    """
    kind = tool_kind(name)
    arguments = _arguments(raw_arguments)
    if arguments is None:
        return ToolView(kind=kind, title=name)
    path = _text(arguments, "path")
    absolute = _absolute(workspace, path) if path is not None else None
    paths = (absolute,) if absolute is not None else ()
    if name == "process_execute":
        command = _text(arguments, "command")
        title = _one_line(command) if command else name
        return ToolView(kind=kind, title=title, arguments=arguments)
    if name == "write_file" and absolute is not None:
        content = _text(arguments, "content") or ""
        diff = Diff(path=absolute, old_text=_current_text(absolute), new_text=content)
        return ToolView(
            kind=kind, title=f"Write {path}", paths=paths, diff=diff, arguments=arguments
        )
    if name == "edit_file" and absolute is not None:
        diff = Diff(
            path=absolute,
            old_text=_text(arguments, "old_text") or "",
            new_text=_text(arguments, "new_text") or "",
        )
        return ToolView(
            kind=kind, title=f"Edit {path}", paths=paths, diff=diff, arguments=arguments
        )
    if name == "read_file" and path is not None:
        return ToolView(kind=kind, title=f"Read {path}", paths=paths, arguments=arguments)
    if name == "list_directory":
        shown = path or "."
        listed = paths or (os.path.normpath(workspace),)
        return ToolView(kind=kind, title=f"List {shown}", paths=listed, arguments=arguments)
    if name == "search_text":
        pattern = _text(arguments, "pattern") or ""
        return ToolView(kind=kind, title=_one_line(f"Search {pattern}"), arguments=arguments)
    if name == "subagent_delegate":
        children: object = arguments.get("children")
        if isinstance(children, list) and children:
            labels = [
                (
                    _text(cast(dict[str, Any], child), "description")
                    if isinstance(child, dict)
                    else None
                )
                or "subagent"
                for child in cast(list[object], children)
            ]
            title = f"Subagents ({len(labels)}): {', '.join(labels)}"
            return ToolView(kind=kind, title=_one_line(title), arguments=arguments)
        description = _text(arguments, "description") or "subagent"
        return ToolView(kind=kind, title=_one_line(f"Subagent: {description}"), arguments=arguments)
    return ToolView(kind=kind, title=name, paths=paths, arguments=arguments)


def _current_text(path: str) -> str | None:
    """The file's text before a write, or None (absent, too large, not text)."""
    try:
        with open(path, "rb") as file:
            if os.fstat(file.fileno()).st_size > MAX_DIFF_FILE_BYTES:
                return None
            data = file.read(MAX_DIFF_FILE_BYTES + 1)
    except OSError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


MAX_CHILD_TEXT_CHARS = 8 * 1024
"""How much of a delegated child's latest text its tool call shows (the tail)."""
MAX_CHILD_TOOL_LINES = 40
"""How many of a child's own tool calls its tool call lists (the latest)."""


@dataclass(slots=True)
class ChildActivity:
    """What a delegated child is doing, rendered into its `subagent_delegate` call's content.

    Everything here is the child model's own text: for the person's screen only.
    """

    description: str
    text: str = ""
    tools: dict[str, tuple[str, str]] | None = None
    """The child's tool calls by id: (title, status), in start order."""

    def add_text(self, text: str) -> None:
        """Appends the child's text (only the latest part is kept, bounded)."""
        self.text = (self.text + text)[-MAX_CHILD_TEXT_CHARS:]

    def tool(self, call_id: str, title: str, status: str) -> None:
        """Records a child's tool call and its latest status."""
        tools = self.tools if self.tools is not None else {}
        tools[call_id] = (title, status)
        while len(tools) > MAX_CHILD_TOOL_LINES:
            del tools[next(iter(tools))]
        self.tools = tools

    def render(self, *, with_text: bool = True) -> str:
        """The child's activity as text: its description, tool calls and (optionally) text."""
        lines = [f"Subagent: {_one_line(self.description)}"]
        for title, status in (self.tools or {}).values():
            lines.append(f"- {title} ({status})")
        if with_text and self.text:
            lines.extend(("", self.text))
        return "\n".join(lines)
