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
    from harness._demo.catalogue import e2e_scenarios, keyed_scenarios
    from harness._demo.runner import run_scenarios_cli
    from harness._endpoint import MissingKeyError

    scenarios = e2e_scenarios()
    if keyed:
        import os

        if not os.environ.get("DEEPSEEK_API_KEY"):
            raise MissingKeyError
        scenarios = [*scenarios, *keyed_scenarios()]
    raise typer.Exit(run_scenarios_cli(scenarios, title="harness e2e", live=live, json=json))
