"""Option types shared by several commands."""

from __future__ import annotations

import json
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from harness._exit import UsageError


class ModeChoice(StrEnum):
    """Work mode: `ask` reads only; `execute` may run commands and write the workspace."""

    ask = "ask"
    execute = "execute"


class PermissionChoice(StrEnum):
    """How an ACP child's permission requests are answered."""

    allow = "allow"
    reject = "reject"
    ask = "ask"


class ApproveChoice(StrEnum):
    """What a child may do without asking (`--approve`): maps onto the provider's permission."""

    reads = "reads"
    all = "all"
    none = "none"


class FileSystemChoice(StrEnum):
    """The client file system an ACP child is offered."""

    none = "none"
    read = "read"
    read_write = "read-write"


ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help=(
            "Path of harness.toml (default: the workspace's harness.toml, else the one in "
            "the user config directory, else the built-in providers)."
        ),
        dir_okay=False,
    ),
]
WorkspaceOption = Annotated[
    Path | None,
    typer.Option(
        "--workspace",
        "-w",
        help="The project directory the agent works in (default: the current directory).",
        file_okay=False,
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Model name (default: DEEPSEEK_MODEL, then harness.toml, then deepseek-chat).",
    ),
]
BaseURLOption = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        envvar="DEEPSEEK_BASE_URL",
        help=(
            "Any OpenAI-compatible endpoint (default: harness.toml, then "
            "https://api.deepseek.com). The key is read from DEEPSEEK_API_KEY."
        ),
    ),
]


def print_version(value: bool) -> None:
    if value:
        from harness._version import installed_version

        sys.stdout.write(f"harness {installed_version()}\n")
        raise typer.Exit(0)


VersionOption = Annotated[
    bool,
    typer.Option(
        "--version",
        help="Print the harness version and exit.",
        callback=print_version,
        is_eager=True,
        expose_value=True,
    ),
]
JSONOption = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Machine-readable output: one JSON object per line (schema in the README).",
    ),
]
ShowThinkingOption = Annotated[
    bool,
    typer.Option("--show-thinking", help="Show the model's reasoning as it streams (dimmed)."),
]
ChildStderrOption = Annotated[
    bool,
    typer.Option(
        "--child-stderr",
        help=(
            "Also show each child's own stderr here as it arrives (for a person at a terminal: "
            "it is the child's text), and name its log directory at the end. Without it, it "
            "only goes to a bounded log under the harness state directory."
        ),
    ),
]


def workspace_path(workspace: Path | None) -> Path:
    """The workspace as an absolute path (the current directory when not given).

    Raises:
        UsageError: the directory does not exist or cannot be entered and read.
    """
    path = (workspace or Path.cwd()).resolve()
    if not path.is_dir() or not os.access(path, os.R_OK | os.X_OK):
        raise UsageError(f"the workspace is not accessible: {path}")
    return path


def read_prompt(prompt: str) -> str:
    """`prompt`, or standard input when it is `-`.

    Raises:
        UsageError: the prompt is empty (after reading stdin, for `-`).
    """
    text = sys.stdin.read() if prompt == "-" else prompt
    if not text.strip():
        raise UsageError("the prompt is empty" + (" (nothing on stdin)" if prompt == "-" else ""))
    return text


def read_schema(path: Path) -> dict[str, Any]:
    """The JSON Schema object in `path` (`--output-schema`).

    Raises:
        UsageError: the file cannot be read, is not JSON, or is not a JSON object.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise UsageError(f"--output-schema: cannot read {path}") from None
    try:
        schema = cast(object, json.loads(text))
    except ValueError:
        raise UsageError(f"--output-schema: {path} is not JSON") from None
    if not isinstance(schema, dict):
        raise UsageError(f"--output-schema: {path} is not a JSON object (a JSON Schema)")
    return cast(dict[str, Any], schema)
