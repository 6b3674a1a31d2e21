"""`harness run PROMPT`: the direct-model agent on a real endpoint, streamed to the terminal."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import (
    BaseURLOption,
    ConfigOption,
    ModeChoice,
    ModelOption,
    ShowThinkingOption,
    WorkspaceOption,
)
from ._support import cli_errors


@cli_errors
def run(
    prompt: Annotated[str, typer.Argument(help="The task for the agent; - reads it from stdin.")],
    mode: Annotated[
        ModeChoice,
        typer.Option(help="ask: read-only tools; execute: may run commands and write files."),
    ] = ModeChoice.ask,
    workspace: WorkspaceOption = None,
    model: ModelOption = None,
    base_url: BaseURLOption = None,
    config: ConfigOption = None,
    max_steps: Annotated[int, typer.Option(min=1, help="Model rounds before giving up.")] = 50,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            "-y",
            help=(
                "Do not ask before each Execute action (commands, file writes). Without it, "
                "execute mode asks on a terminal and refuses when there is none to ask."
            ),
        ),
    ] = False,
    show_thinking: ShowThinkingOption = False,
    mcp: Annotated[
        list[str] | None,
        typer.Option(
            "--mcp",
            help=(
                'An MCP server for this run: NAME=URL (streamable HTTP) or "NAME=COMMAND ARGS" '
                "(stdio). Repeatable; adds to (or replaces by name) harness.toml's [mcp.NAME]."
            ),
        ),
    ] = None,
) -> None:
    """Run the direct-model agent on PROMPT against a real endpoint.

    Streams the answer, shows tool calls, commands and child agents live, and prints token
    usage at the end. Needs DEEPSEEK_API_KEY for the DeepSeek API; with --base-url any
    OpenAI-compatible server works. In execute mode each command or file write is shown and
    needs your yes first (unless --yes). Ctrl-C cancels cleanly: every child and command is
    stopped and a summary is printed. Exit 0 when the run completed, 1 when it failed (the
    reason is printed), 2 for a usage error, 130 when interrupted.
    """
    from harness._live.model_run import run_command

    raise typer.Exit(
        run_command(
            prompt=prompt,
            mode=mode.value,
            workspace=workspace,
            model=model,
            base_url=base_url,
            config=config,
            max_steps=max_steps,
            ask=not yes,
            show_thinking=show_thinking,
            mcp=mcp or [],
        )
    )
