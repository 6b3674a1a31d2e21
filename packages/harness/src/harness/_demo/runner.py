"""Runs scenarios against one scripted model server, with live progress and a result table."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from subagent_core import SubagentResult

from harness._console.consoles import output_console
from harness._console.exit_codes import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK
from harness._console.ndjson import emit

from .scenario import Scenario, ScenarioContext, ScenarioOutcome, check

SCENARIO_TIMEOUT_SECONDS = 120.0
CONCURRENCY = 4

_log = logging.getLogger("harness.scenarios")


async def run_scenarios(
    scenarios: Sequence[Scenario],
    *,
    on_update: Callable[[str, str], None] | None = None,
    workdir: Path | None = None,
) -> list[ScenarioOutcome]:
    """Runs every scenario (at most `CONCURRENCY` at once); outcomes in the input order.

    One scripted model server serves all of them: each scenario's rules match its own token.
    Workspaces and the children's session state live in one temporary directory, removed at
    the end.
    """
    from model_agent.testing import open_scripted_model_server

    rules = [rule for scenario in scenarios for rule in scenario.rules]
    outcomes: dict[int, ScenarioOutcome] = {}
    limiter = anyio.CapacityLimiter(CONCURRENCY)
    notify: Callable[[str, str], None] = on_update or _ignore
    with tempfile.TemporaryDirectory(prefix="harness-scenarios-", dir=workdir) as tmp:
        async with open_scripted_model_server({"rules": rules}) as server:

            async def one(index: int, scenario: Scenario) -> None:
                workspace = Path(tmp) / f"scenario-{index}"
                workspace.mkdir()
                context = ScenarioContext(
                    base_url=server.base_url,
                    workspace=workspace.resolve(),
                    state_dir=(Path(tmp) / f"state-{index}").resolve(),
                )
                async with limiter:
                    notify(scenario.name, "running")
                    outcomes[index] = await run_one(scenario, context)
                    notify(scenario.name, "matched" if outcomes[index].matched else "MISMATCH")

            async with anyio.create_task_group() as tg:
                for index, scenario in enumerate(scenarios):
                    notify(scenario.name, "waiting")
                    tg.start_soon(one, index, scenario)
    return [outcomes[index] for index in range(len(scenarios))]


async def run_one(scenario: Scenario, context: ScenarioContext) -> ScenarioOutcome:
    """Runs one scenario body, bounded; an exception is a mismatch row, never a crash."""
    try:
        with anyio.fail_after(SCENARIO_TIMEOUT_SECONDS):
            result = await scenario.body(context)
    except TimeoutError:
        return ScenarioOutcome(
            name=scenario.name,
            result=SubagentResult(stop_reason="error"),
            mismatch="timed out",
        )
    except Exception as error:
        _log.debug("scenario %s raised", scenario.name, exc_info=True)
        return ScenarioOutcome(
            name=scenario.name,
            result=SubagentResult(stop_reason="error"),
            mismatch=f"raised {type(error).__name__}",
        )
    return ScenarioOutcome(
        name=scenario.name, result=result, mismatch=check(scenario, context, result)
    )


def result_table(title: str, outcomes: Sequence[ScenarioOutcome]) -> Table:
    """Scenario, stop reason, output, diagnostic, and whether it matched."""
    table = Table(title=title, show_lines=True)
    table.add_column("scenario", style="bold")
    table.add_column("stop reason")
    table.add_column("output", overflow="fold", max_width=48)
    table.add_column("diagnostic", overflow="fold", max_width=48)
    table.add_column("matched")
    for outcome in outcomes:
        result = outcome.result
        table.add_row(
            escape(outcome.name),
            result.stop_reason,
            escape(_clip(result.output)),
            escape(result.diagnostic or "—"),
            "[green]yes[/]" if outcome.matched else f"[red]no: {escape(outcome.mismatch or '')}[/]",
        )
    return table


def run_scenarios_cli(
    scenarios: Sequence[Scenario], *, title: str, live: bool, json: bool = False
) -> int:
    """Runs `scenarios` with live progress, prints the table; 0 only when all matched.

    With `json`, prints one NDJSON `scenario` object per row and a `summary` object instead.
    """
    console = output_console()
    live = live and not json and console.is_terminal
    states: dict[str, str] = {}

    def progress() -> Table:
        table = Table(title=f"{title}: running", show_header=False, box=None)
        for name, state in states.items():
            colour = {"matched": "green", "MISMATCH": "red", "running": "yellow"}.get(state, "dim")
            table.add_row(escape(name), f"[{colour}]{state}[/]")
        return table

    async def main() -> list[ScenarioOutcome]:
        if not live:
            return await run_scenarios(scenarios)
        with Live(progress(), console=console, refresh_per_second=8, transient=True) as view:

            def update(name: str, state: str) -> None:
                states[name] = state
                view.update(progress())

            return await run_scenarios(scenarios, on_update=update)

    try:
        outcomes = anyio.run(main, backend="asyncio")
    except KeyboardInterrupt:
        # The runs were cancelled and every child disposed before this point.
        output_console(stderr=True).print(
            "[yellow]interrupted: every scenario's child was stopped[/]"
        )
        return EXIT_INTERRUPTED
    matched = sum(outcome.matched for outcome in outcomes)
    code = EXIT_OK if matched == len(outcomes) else EXIT_INCOMPLETE
    if json:
        for outcome in outcomes:
            emit(
                {
                    "type": "scenario",
                    "name": outcome.name,
                    "stop_reason": outcome.result.stop_reason,
                    "output": outcome.result.output,
                    "diagnostic": outcome.result.diagnostic,
                    "matched": outcome.matched,
                    "mismatch": outcome.mismatch,
                }
            )
        emit({"type": "summary", "matched": matched, "total": len(outcomes), "exit_code": code})
        return code
    console.print(result_table(title, outcomes))
    console.print(f"{matched}/{len(outcomes)} scenarios matched")
    return code


def _ignore(name: str, state: str) -> None:
    pass


def _clip(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
