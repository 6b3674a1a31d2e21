"""Option types shared by several commands (what `--help` shows is written here)."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer


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
        help="Machine-readable output: one JSON object per line (schema: docs/json-output.md).",
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
StateDirOption = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        envvar="HARNESS_STATE_DIR",
        help=(
            "Where sessions are kept so a restarted server continues them "
            "(default: the user's XDG state directory, e.g. ~/.local/state/harness)."
        ),
        file_okay=False,
    ),
]
VerboseOption = Annotated[
    bool,
    typer.Option("--verbose", "-v", help="Host logs at debug level on stderr (never stdout)."),
]
LogFileOption = Annotated[
    Path | None,
    typer.Option(
        "--log-file", help="Also write host logs (debug level) to this file.", dir_okay=False
    ),
]
