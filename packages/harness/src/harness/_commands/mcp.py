"""`harness mcp`: the harness as an MCP server on stdio, for Claude Code, Codex, Cursor, …"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._options import (
    ApproveChoice,
    BaseURLOption,
    ConfigOption,
    LogFileOption,
    ModelOption,
    VerboseOption,
)
from ._support import cli_errors


@cli_errors
def mcp(
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            "-w",
            help=(
                "The root every call's workspace must stay inside (a call naming another "
                "directory is refused); its harness.toml is the config. Default: the current "
                "directory."
            ),
            file_okay=False,
        ),
    ] = None,
    config: ConfigOption = None,
    approve: Annotated[
        ApproveChoice,
        typer.Option(
            help=(
                "What every child may do without asking: reads (read and search; the rest "
                "refused), all, or none. Agents with no permission setting need all."
            ),
        ),
    ] = ApproveChoice.reads,
    max_runs: Annotated[
        int, typer.Option(min=1, help="Children alive at once, over every call.")
    ] = 4,
    max_queued: Annotated[
        int,
        typer.Option(min=0, help="Calls waiting for a slot; past them a call is refused."),
    ] = 16,
    model: ModelOption = None,
    base_url: BaseURLOption = None,
    verbose: VerboseOption = False,
    log_file: LogFileOption = None,
) -> None:
    """Serve the harness's delegation as MCP tools on stdin/stdout.

    Tools: agents, delegate (one child, or one turn of a kept session), delegate_start /
    delegate_status / delegate_result / delegate_cancel (long tasks), fanout (one task on
    several agents in separate worktrees), sessions, session_close. Each child runs contained:
    a cancelled call, the client closing stdin or dying, and a signal all stop every child's
    whole process tree. Register it with `claude mcp add harness -- harness mcp` (see the
    README for Codex and Cursor). stdout carries MCP frames only; logs go to stderr.
    """
    from harness._agent_servers.mcp_server import mcp_command

    raise typer.Exit(
        mcp_command(
            workspace=workspace,
            config=config,
            approve=approve.value,
            max_runs=max_runs,
            max_queued=max_queued,
            model=model,
            base_url=base_url,
            verbose=verbose,
            log_file=log_file,
        )
    )
