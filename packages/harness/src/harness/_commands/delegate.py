"""`harness delegate PROMPT --provider NAME`: one subagent run through the registry."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import BaseURLOption, ConfigOption, ModelOption, WorkspaceOption, workspace_path
from ._support import cli_errors


@cli_errors
def delegate(
    prompt: Annotated[str, typer.Argument(help="The task to hand to the child.")],
    provider: Annotated[
        str,
        typer.Option(
            "--provider",
            "-p",
            help="A provider from `harness providers` (built in: acp, dsh-sdk, model).",
        ),
    ],
    workspace: WorkspaceOption = None,
    config: ConfigOption = None,
    model: ModelOption = None,
    base_url: BaseURLOption = None,
) -> None:
    """Run one child through a configured provider and print its result.

    Prints the child's output on stdout, then its stop reason and (when it failed) its safe
    diagnostic on stderr, kept apart. Exit 0 when the child completed, 1 otherwise.
    """
    from harness._config import load_config
    from harness._delegation import delegate_once

    root = workspace_path(workspace)
    settings = load_config(config, workspace=root)
    code = delegate_once(settings, provider, prompt, workspace=root, base_url=base_url, model=model)
    raise typer.Exit(code)
