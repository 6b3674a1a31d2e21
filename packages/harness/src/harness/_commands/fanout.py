"""`harness fanout PROMPT -a NAME -a NAME …`: one task on several agents, compared side by side."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ._options import (
    BaseURLOption,
    ChildStderrOption,
    ConfigOption,
    JSONOption,
    ModelOption,
    WorkspaceOption,
)
from ._support import cli_errors


class IsolationChoice(StrEnum):
    """Where each child works."""

    worktree = "worktree"
    copy = "copy"
    none = "none"


@cli_errors
def fanout(
    prompt: Annotated[
        str, typer.Argument(help="The task every child gets; - reads it from stdin.")
    ],
    agent: Annotated[
        list[str],
        typer.Option(
            "--agent",
            "-a",
            help="A provider from `harness providers`; repeat for each child (a name may repeat).",
        ),
    ],
    isolation: Annotated[
        IsolationChoice,
        typer.Option(
            help=(
                "worktree: a git worktree per child on a fresh fanout/ branch (the default; "
                "needs a git repository); copy: a temporary copy of the workspace; none: every "
                "child in the workspace itself (needs --yes)."
            ),
        ),
    ] = IsolationChoice.worktree,
    keep: Annotated[
        bool,
        typer.Option("--keep", help="Keep the worktrees, their branches and the copies."),
    ] = False,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Accept --isolation none (children share the files)."),
    ] = False,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="At most this many children at once (default: all)."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0.001,
            help="Stop a child after this many seconds (it ends aborted, shown as timed out).",
        ),
    ] = None,
    patches: Annotated[
        Path | None,
        typer.Option(
            "--patches",
            file_okay=False,
            help=(
                "Directory for the children's patches (default: fanout/<run> under the "
                "harness state directory, HARNESS_STATE_DIR or ~/.local/state/harness)."
            ),
        ),
    ] = None,
    workspace: WorkspaceOption = None,
    config: ConfigOption = None,
    model: ModelOption = None,
    base_url: BaseURLOption = None,
    json: JSONOption = False,
    child_stderr: ChildStderrOption = False,
) -> None:
    """Run the same task on several agents at once, each in its own worktree, and compare.

    While they work: a live row per child on a terminal, plain lines otherwise. Then a table
    (agent, stop reason, wall time, tokens, cost, files changed, diagnostic) and the patch of
    each child. Worktrees, branches and copies are removed afterwards unless --keep. Exit 0
    when at least one child completed, 1 otherwise, 2 for a usage error (worktree isolation
    outside a git repository among them), 130 when interrupted.
    """
    from harness.fanout._command import fanout_command

    raise typer.Exit(
        fanout_command(
            prompt=prompt,
            agents=agent,
            isolation=isolation.value,
            yes=yes,
            keep=keep,
            concurrency=concurrency,
            timeout_seconds=timeout,
            patch_dir=patches,
            workspace=workspace,
            config=config,
            model=model,
            base_url=base_url,
            json=json,
            child_stderr=child_stderr,
        )
    )
