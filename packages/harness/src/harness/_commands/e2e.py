"""`harness e2e`: the end-to-end scenario table."""

from __future__ import annotations

from typing import Annotated

import typer

from ._options import JSONOption
from ._support import cli_errors


@cli_errors
def e2e(
    keyed: Annotated[
        bool,
        typer.Option("--keyed", help="Add the real-model scenarios (needs DEEPSEEK_API_KEY)."),
    ] = False,
    live: Annotated[bool, typer.Option("--live/--no-live", help="Show live progress.")] = True,
    json: JSONOption = False,
) -> None:
    """Run the keyless end-to-end scenarios and print their table.

    Covers the demo plus failure and cancel paths (scripted model failures over ACP and the
    SDK protocol, a cancelled child). With --keyed, also runs the real-model scenarios
    against DeepSeek. Exit 0 only when every scenario matched.
    """
    from harness._demo.catalogue import e2e_command

    raise typer.Exit(e2e_command(keyed=keyed, live=live, json=json))
