"""`harness fanout PROMPT -a NAME -a NAME …`: one task on several agents, compared side by side;
`harness fanout list`, `apply [RUN] AGENT` and `report [RUN]` for what it left.

`fanout` is a group whose default command is `run`: a first word that is not `list`, `apply`,
`report` or `run` (or `--help`) is the start of `run`'s arguments, so `harness fanout "fix
it" -a A -a B` runs as it always has (a prompt that is one of those words: `harness fanout run
list …`, or `-` to read it from stdin).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from harness._console.exit_codes import UsageError

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


class _RunByDefault(TyperGroup):
    """A group whose first argument, unless it names a subcommand, starts the `run` command."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's own vendored Context
        if args and args[0] not in self.commands and args[0] != "--help":
            args = ["run", *args]
        return super().parse_args(ctx, args)


fanout_app = typer.Typer(
    name="fanout",
    cls=_RunByDefault,
    help=(
        "Run one task on several agents at once, each in its own worktree, and compare: "
        "`harness fanout PROMPT -a A -a B [--verify CMD]` (the `run` command). Then "
        "`harness fanout list` shows the recent runs, `apply [RUN] AGENT` takes one child's "
        "patch into the work tree, and `report [RUN]` writes a run's HTML page."
    ),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


@fanout_app.command("run")
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
    verify: Annotated[
        str | None,
        typer.Option(
            "--verify",
            help=(
                "A shell command run in each child's place once it settled (its own process "
                "tree; output to a log in the run's folder): pass, fail (exit N) or timeout; "
                "a child that changed a protected file is tampered."
            ),
        ),
    ] = None,
    verify_timeout: Annotated[
        float,
        typer.Option(
            "--verify-timeout",
            min=0.001,
            help="Kill the verify command's whole tree after this many seconds (default 600).",
        ),
    ] = 600.0,
    protect: Annotated[
        list[str] | None,
        typer.Option(
            "--protect",
            help=(
                "A GLOB of files a child must not change, created or deleted (repeatable), "
                "added to the test configuration files (pytest.ini, pyproject.toml, "
                "conftest.py, package.json, …) and the files --verify names."
            ),
        ),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            dir_okay=False,
            help="Write the run as one self-contained HTML page (table, diffs side by side).",
        ),
    ] = None,
) -> None:
    """Run the same task on several agents at once, each in its own worktree, and compare.

    While they work: a live row per child on a terminal (state, current tool, tool calls,
    tokens, cost, elapsed), plain lines otherwise. Then a table, best first (verify outcome,
    stop reason, cost, wall time), and the patch of each child. Worktrees, branches and copies
    are removed afterwards unless --keep. Exit 0 when at least one child completed, 1
    otherwise, 2 for a usage error (worktree isolation outside a git repository among them),
    130 when interrupted.
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
            verify=verify,
            protect=tuple(protect or ()),
            verify_timeout_seconds=verify_timeout,
            report=report,
        )
    )


@fanout_app.command("list")
@cli_errors
def list_runs(
    json: JSONOption = False,
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many runs.")] = 20,
) -> None:
    """The recent fan-out runs, newest first: run id, start, children, completed, verify
    passes, the best child, workspace (from the records under the state directory)."""
    from harness.fanout._manage import list_command

    raise typer.Exit(list_command(json=json, limit=limit))


@fanout_app.command("apply")
@cli_errors
def apply(
    names: Annotated[
        list[str],
        typer.Argument(
            metavar="[RUN] AGENT",
            help=(
                "The run (default: the latest; a unique start of its id is enough) and the "
                "child: its agent's name, or its number (2 or #2)."
            ),
            show_default=False,
        ),
    ],
    workspace: WorkspaceOption = None,
) -> None:
    """Take one child's patch into the work tree with a three-way merge, whole or not at all.

    Refused (exit 1, nothing changed: files, index, HEAD, refs) when it conflicts with changes
    in the workspace (unstaged, staged or committed since the run) or does not apply; an
    unrelated edit does not block it. The files are written, the index is left as it was.
    """
    from harness.fanout._manage import apply_command

    if len(names) > 2:
        raise UsageError("apply takes at most two arguments: [RUN] AGENT")
    run, agent = (None, names[0]) if len(names) == 1 else (names[0], names[1])
    raise typer.Exit(apply_command(run=run, agent=agent, workspace=workspace))


@fanout_app.command("report")
@cli_errors
def report_page(
    run: Annotated[
        str | None, typer.Argument(help="The run (default: the latest).", show_default=False)
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            dir_okay=False,
            help="Where to write it (default: report.html in the run's folder).",
        ),
    ] = None,
) -> None:
    """Write a run's self-contained HTML page (table, each child's diff side by side, verify
    outcomes and timing; no script, nothing fetched) and print its path."""
    from harness.fanout._manage import report_command

    raise typer.Exit(report_command(run=run, report=report))
