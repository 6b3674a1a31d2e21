"""`harness acp-agent`: the direct-model agent served as an ACP agent on stdio."""

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
def acp_agent(
    mode: Annotated[
        ModeChoice,
        typer.Option(help="Initial mode of new sessions (the client may switch it per session)."),
    ] = ModeChoice.execute,
    model: ModelOption = None,
    base_url: BaseURLOption = None,
    ask_permission: Annotated[
        bool,
        typer.Option(
            "--ask-permission/--no-ask-permission",
            help=(
                "Ask the ACP client (session/request_permission) before every Execute action; "
                "a refusal becomes a tool error the model sees."
            ),
        ),
    ] = True,
    max_steps: Annotated[
        int, typer.Option(min=1, help="Model rounds per prompt before max_turn_requests.")
    ] = 50,
    config: ConfigOption = None,
    state_dir: StateDirOption = None,
    verbose: VerboseOption = False,
    log_file: LogFileOption = None,
) -> None:
    """Serve the direct-model agent as an ACP agent on stdin/stdout.

    Any ACP client can drive it (this project's ACP provider included): configure it as the
    command `harness acp-agent`. Sessions keep their conversation, survive restarts
    (session/list, session/load, session/resume) and switch between the ask and execute
    modes. Without DEEPSEEK_API_KEY it still starts and answers auth_required until a key is
    set. Stop reasons: end_turn, max_tokens, refusal, cancelled; the step limit answers
    max_turn_requests; a failed turn answers JSON-RPC error -32603 "Internal error". Logs go
    to stderr (or --log-file), never stdout.
    """
    from harness._agent_servers.acp_stdio import acp_agent_command

    raise typer.Exit(
        acp_agent_command(
            mode=mode.value,
            model=model,
            base_url=base_url,
            ask_permission=ask_permission,
            max_steps=max_steps,
            config=config,
            state_dir=state_dir,
            verbose=verbose,
            log_file=log_file,
        )
    )
