"""`harness acp-agent`: the direct-model agent served as an ACP agent on stdio."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import BaseURLOption, ConfigOption, ModeChoice, ModelOption
from ._support import cli_errors


@cli_errors
def acp_agent(
    mode: Annotated[
        ModeChoice,
        typer.Option(help="Work mode of every session (execute may run commands)."),
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
) -> None:
    """Serve the direct-model agent as an ACP agent on stdin/stdout.

    Any ACP client can drive it (this project's ACP provider included): configure it as the
    command `harness acp-agent`. session/new's cwd is the workspace. Stop reasons: end_turn,
    max_tokens, refusal, cancelled; the step limit answers max_turn_requests; a failed turn
    answers JSON-RPC error -32603 "Internal error". Logs go to stderr, never stdout.
    """
    from pathlib import Path

    from harness._acp_server import serve_acp
    from harness._config import load_config
    from harness._endpoint import resolve_endpoint

    settings = load_config(config, workspace=Path.cwd())
    endpoint = resolve_endpoint(settings.model, base_url=base_url, model=model)
    raise typer.Exit(
        serve_acp(
            endpoint=endpoint,
            mode=mode.value,
            ask_permission=ask_permission,
            max_steps=max_steps,
        )
    )
