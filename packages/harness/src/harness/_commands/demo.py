"""`harness demo`: the keyless tour of the whole system."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import JSONOption
from ._support import cli_errors


@cli_errors
def demo(
    live: Annotated[
        bool, typer.Option("--live/--no-live", help="Show live progress while scenarios run.")
    ] = True,
    json: JSONOption = False,
) -> None:
    """Run the keyless demo: every way of delegating, against a scripted model.

    Starts a scripted OpenAI-compatible model on 127.0.0.1, runs the direct-model agent on a
    task that executes a real command and delegates to an in-process child, then delegates over
    ACP (to the fake ACP child and to `harness acp-agent`) and over the SDK protocol (to
    `harness sdk-runtime`). Prints a table of scenario, stop reason, output and diagnostic.
    No API key needed. Exit 0 only when every scenario matched its expectation.
    """
    from harness._demo.catalogue import demo_command

    raise typer.Exit(demo_command(live=live, json=json))
