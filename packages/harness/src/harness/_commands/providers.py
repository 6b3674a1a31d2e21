"""`harness providers`: what is configured, and can each provider start."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import ConfigOption, JSONOption, WorkspaceOption
from ._support import cli_errors


@cli_errors
def providers(
    workspace: WorkspaceOption = None,
    config: ConfigOption = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check/--no-check",
            help="Start each provider once (ACP: initialize + session/new; SDK: initialize).",
        ),
    ] = True,
    json: JSONOption = False,
) -> None:
    """List the configured providers and check that each can start.

    A provider that cannot start shows its safe diagnostic (never the child's own error text).
    Exit 0 when every checked provider started, 1 otherwise.
    """
    from harness._registry.provider_check import providers_command

    raise typer.Exit(providers_command(workspace=workspace, config=config, check=check, json=json))
