"""Option types shared by several commands."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer


class ModeChoice(StrEnum):
    """Work mode: `ask` reads only; `execute` may run commands and write the workspace."""

    ask = "ask"
    execute = "execute"


ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="Path of harness.toml (default: harness.toml in the workspace, if present).",
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


def workspace_path(workspace: Path | None) -> Path:
    """The workspace as an absolute path (the current directory when not given)."""
    return (workspace or Path.cwd()).resolve()
