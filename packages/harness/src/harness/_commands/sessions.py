"""`harness sessions`: the kept sessions of `delegate --session NAME`; `close`, `prune`."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import JSONOption
from ._support import cli_errors

sessions_app = typer.Typer(
    name="sessions",
    help=(
        "The sessions `harness delegate --session NAME` keeps: name, agent, workspace, turns, "
        "tokens, cost, last used. `close NAME` deletes one, `prune --older-than 7d` the stale."
    ),
    invoke_without_command=True,
    no_args_is_help=False,
    add_completion=False,
    rich_markup_mode=None,
)


@sessions_app.callback()
@cli_errors
def sessions(ctx: typer.Context, json: JSONOption = False) -> None:
    """List the kept sessions, most recently used first."""
    if ctx.invoked_subcommand is not None:
        return
    from harness._live.kept_sessions import sessions_command

    raise typer.Exit(sessions_command(json=json))


@sessions_app.command("close")
@cli_errors
def close(name: Annotated[str, typer.Argument(help="The session's name.")]) -> None:
    """Delete a kept session: its record and the child's own state for it (the child's side
    of the conversation is kept only there, so it ends with it)."""
    from harness._live.kept_sessions import close_command

    raise typer.Exit(close_command(name))


@sessions_app.command("prune")
@cli_errors
def prune(
    older_than: Annotated[
        str,
        typer.Option("--older-than", help="Delete sessions last used longer ago (7d, 12h, 30m)."),
    ],
) -> None:
    """Delete every kept session not used for the given time (sessions in use are kept)."""
    from harness._live.kept_sessions import prune_command

    raise typer.Exit(prune_command(older_than))
