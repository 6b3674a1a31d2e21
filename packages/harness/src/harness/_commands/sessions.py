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
    from harness._named_sessions import sessions_root
    from harness._sessions_view import print_sessions

    print_sessions(sessions_root(), json=json)


@sessions_app.command("close")
@cli_errors
def close(name: Annotated[str, typer.Argument(help="The session's name.")]) -> None:
    """Delete a kept session: its record and the child's own state for it (the child's side
    of the conversation is kept only there, so it ends with it)."""
    from harness._exit import UsageError
    from harness._named_sessions import check_name, find_session, remove_session, sessions_root

    root = sessions_root()
    record = find_session(root, check_name(name))
    if record is None:
        raise UsageError(f"no session named {name}")
    if not remove_session(root, record):
        raise UsageError(f"session {name} is in use by a running delegate; try again after it")
    typer.echo(f"closed session {name}")


@sessions_app.command("prune")
@cli_errors
def prune(
    older_than: Annotated[
        str,
        typer.Option("--older-than", help="Delete sessions last used longer ago (7d, 12h, 30m)."),
    ],
) -> None:
    """Delete every kept session not used for the given time (sessions in use are kept)."""
    from harness._named_sessions import parse_age, prune, sessions_root

    removed = prune(sessions_root(), parse_age(older_than))
    names = ", ".join(record.label or record.handle for record in removed)
    typer.echo(f"pruned {len(removed)} session(s)" + (f": {names}" if names else ""))
