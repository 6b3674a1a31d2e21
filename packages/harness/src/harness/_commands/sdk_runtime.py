"""`harness sdk-runtime`: the direct-model agent served over the SDK stdio protocol."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import (
    BaseURLOption,
    ConfigOption,
    LogFileOption,
    ModeChoice,
    ModelOption,
    StateDirOption,
    VerboseOption,
)
from ._support import cli_errors


@cli_errors
def sdk_runtime(
    mode: Annotated[
        ModeChoice,
        typer.Option(help="Work mode of every session (the SDK wire has no approval step)."),
    ] = ModeChoice.execute,
    model: ModelOption = None,
    base_url: BaseURLOption = None,
    max_steps: Annotated[int, typer.Option(min=1, help="Model rounds per prompt.")] = 50,
    config: ConfigOption = None,
    state_dir: StateDirOption = None,
    verbose: VerboseOption = False,
    log_file: LogFileOption = None,
) -> None:
    """Serve the direct-model agent over the DeepSeek Harness SDK protocol on stdio.

    Wire-compatible with the SDK runtime: newline-delimited JSON-RPC, session/prompt receipts,
    session.event envelopes, session.status, subagent.started/finished for in-process
    children. A session keeps its conversation across prompts and restarts (stored under
    --state-dir). shutdown, stdin EOF or SIGTERM end it with exit 0. A failed turn ends with
    turn/end {kind: "error"}.
    """
    from harness._agent_servers.sdk_server import sdk_runtime_command

    raise typer.Exit(
        sdk_runtime_command(
            mode=mode.value,
            model=model,
            base_url=base_url,
            max_steps=max_steps,
            config=config,
            state_dir=state_dir,
            verbose=verbose,
            log_file=log_file,
        )
    )
