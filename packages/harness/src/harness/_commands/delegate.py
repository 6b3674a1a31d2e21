"""`harness delegate PROMPT --provider NAME`: one subagent run through the registry."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import (
    BaseURLOption,
    ConfigOption,
    JSONOption,
    ModelOption,
    ShowThinkingOption,
    WorkspaceOption,
    read_prompt,
    workspace_path,
)
from ._support import cli_errors


@cli_errors
def delegate(
    prompt: Annotated[
        str, typer.Argument(help="The task to hand to the child; - reads it from stdin.")
    ],
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
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0.001,
            help="Stop the child after this many seconds (it ends aborted, exit 1).",
        ),
    ] = None,
    json: JSONOption = False,
    show_thinking: ShowThinkingOption = False,
) -> None:
    """Run one child through a configured provider and print its result.

    While the child works: a live view on a terminal (streaming answer, a line per tool call),
    plain progress lines otherwise. Then the child's output on stdout, and its stop reason and
    (when it failed) its safe diagnostic on stderr, kept apart. With --json: one JSON object
    per event and a final result object on stdout. Exit 0 when the child completed, 1
    otherwise, 2 for a usage error, 130 when interrupted.
    """
    from harness._config import load_config
    from harness._delegation import DelegateOptions, delegate_once

    root = workspace_path(workspace)
    settings = load_config(config, workspace=root)
    code = delegate_once(
        settings,
        provider,
        read_prompt(prompt),
        workspace=root,
        base_url=base_url,
        model=model,
        options=DelegateOptions(timeout_seconds=timeout, json=json, show_thinking=show_thinking),
    )
    raise typer.Exit(code)
