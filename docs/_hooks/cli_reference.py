"""MkDocs hook: the CLI reference page, rendered from the typer app on every build.

`reference/cli.md` is not a file under `docs/`: it is generated from `harness.cli:app`, so the
page always says what `harness COMMAND --help` says, word for word, and a command added to the
app appears without anyone editing the docs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

PAGE = "reference/cli.md"
"""Where the generated page sits in the site (the nav in mkdocs.yml names it)."""
PROG_NAME = "harness"
"""The command's name, as a person types it."""
HELP_WIDTH = 78
"""The width the help text is wrapped to: what fits the page's code column unscrolled."""


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Adds the generated page to the site's files before the nav is built."""
    files.append(File.generated(config, PAGE, content=cli_reference()))
    return files


def cli_reference() -> str:
    """The page: a summary table, then each command's full `--help` under its own heading."""
    from harness.cli import app

    root = typer.main.get_command(app)
    root_ctx = _context(root, PROG_NAME, None)
    commands = list(_walk(root, root_ctx))
    lines = [
        "# CLI reference",
        "",
        "Generated from the command line itself when the site is built: each section is the",
        "command's `--help`. Every command also takes `--version`; exit codes are 0 success,",
        "1 a run that did not complete, 2 a usage or configuration error, 130 interrupted.",
        "",
        "| command | does |",
        "|---|---|",
    ]
    for ctx, _depth in commands:
        summary = ctx.command.get_short_help_str(limit=120).replace("|", "\\|")
        lines.append(f"| [`{ctx.command_path}`](#{_anchor(ctx)}) | {summary} |")
    lines.extend(["", f"## `{PROG_NAME}` {{#{PROG_NAME}-cli}}", "", *_help_block(root_ctx)])
    for ctx, depth in commands:
        heading = "#" * (2 + depth)
        lines.extend(
            ["", f"{heading} `{ctx.command_path}` {{#{_anchor(ctx)}}}", "", *_help_block(ctx)]
        )
    return "\n".join(lines) + "\n"


# typer may carry its own copy of click (0.29 does), so commands and contexts are used through
# their methods and `context_class` rather than checked against `click`'s classes.


def _walk(group: Any, parent: Any, depth: int = 0) -> Iterator[tuple[Any, int]]:
    """Every visible subcommand in the app's own order, each group before its members."""
    if not hasattr(group, "list_commands"):
        return
    for name in group.list_commands(parent):
        command = group.get_command(parent, name)
        if command is None or command.hidden:
            continue
        ctx = _context(command, name, parent)
        yield ctx, depth
        yield from _walk(command, ctx, depth + 1)


def _context(command: Any, name: str, parent: Any) -> Any:
    return command.context_class(
        command,
        info_name=name,
        parent=parent,
        terminal_width=HELP_WIDTH,
        max_content_width=HELP_WIDTH,
    )


def _anchor(ctx: Any) -> str:
    return str(ctx.command_path).replace(" ", "-")


def _help_block(ctx: Any) -> list[str]:
    return ["```text", str(ctx.command.get_help(ctx)).rstrip(), "```"]
