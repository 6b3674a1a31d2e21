"""`harness agents`: the agents by name and the configured providers, found or not."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import ConfigOption, JSONOption, WorkspaceOption
from ._support import cli_errors


@cli_errors
def agents(
    workspace: WorkspaceOption = None,
    config: ConfigOption = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Also start each found agent once and show its safe diagnostic.",
        ),
    ] = False,
    json: JSONOption = False,
) -> None:
    """List the agents by name (presets) and the configured providers.

    For each: found on PATH or not, its version (when `--version` answers quickly), the
    credential variables it is missing (named, never shown) and how to install it. Exit 0,
    or 1 when --check found an agent that could not start.
    """
    from harness._registry.agent_listing import agents_command

    raise typer.Exit(agents_command(workspace=workspace, config=config, check=check, json=json))
