"""The demo's and `harness e2e`'s scenarios as tests, plus the pinned presentation strings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from harness._scenario_bodies import ACP_FAILURE, SDK_FAILURE, demo, failures, keyed
from harness._scenario_runner import run_one
from harness._scenarios import Scenario, ScenarioContext, has_api_key
from subagent_core import SubagentResult, foreground_text, job_outcome

DEMO = {scenario.name: scenario for scenario in demo()}
FAILURES = {scenario.name: scenario for scenario in failures()}


async def _run(scenario: Scenario, scripted_model: Any, workspace: Path) -> SubagentResult:
    with anyio.fail_after(90):
        async with scripted_model(scenario.rules) as server:
            context = ScenarioContext(base_url=server.base_url, workspace=workspace)
            outcome = await run_one(scenario, context)
    assert outcome.mismatch is None, outcome
    return outcome.result


@pytest.mark.parametrize("name", list(DEMO))
async def test_demo_scenario(name: str, scripted_model: Any, workspace: Path) -> None:
    result = await _run(DEMO[name], scripted_model, workspace)
    assert result.stop_reason == "completed"
    assert result.diagnostic is None


async def test_acp_agent_model_failure_is_pinned(scripted_model: Any, workspace: Path) -> None:
    result = await _run(FAILURES["acp: acp-agent model failure"], scripted_model, workspace)
    assert result == SubagentResult(stop_reason="error", output="", diagnostic=ACP_FAILURE)
    assert ACP_FAILURE == "Subagent failure (provider: acp; stage: prompt; category: transport)"
    text = foreground_text(result)
    assert text.is_error
    assert text.text == (
        "subagent run failed\n"
        "Diagnostic: Subagent failure (provider: acp; stage: prompt; category: transport)"
    )
    assert job_outcome(result).status_line == (
        "[status: failed, error; diagnostic: "
        "Subagent failure (provider: acp; stage: prompt; category: transport)]"
    )


async def test_sdk_runtime_model_failure_is_pinned(scripted_model: Any, workspace: Path) -> None:
    result = await _run(FAILURES["sdk: sdk-runtime model failure"], scripted_model, workspace)
    assert result == SubagentResult(stop_reason="error", output="", diagnostic=SDK_FAILURE)
    assert SDK_FAILURE == (
        "Subagent failure (provider: dsh-sdk; stage: session-run; category: child-error; "
        "stop reason: error)"
    )
    text = foreground_text(result)
    assert text.is_error
    assert text.text == (
        "subagent run failed\n"
        "Diagnostic: Subagent failure (provider: dsh-sdk; stage: session-run; "
        "category: child-error; stop reason: error)"
    )
    assert job_outcome(result).status_line == (
        "[status: failed, error; diagnostic: Subagent failure (provider: dsh-sdk; "
        "stage: session-run; category: child-error; stop reason: error)]"
    )


@pytest.mark.parametrize(
    ("name", "marker"),
    [
        ("acp: cancel reaches the child's command", "e2e-acp-cancel-started"),
        ("sdk: cancel reaches the child's command", "e2e-sdk-cancel-started"),
    ],
)
async def test_cancel_reaches_the_childs_command(
    name: str, marker: str, scripted_model: Any, workspace: Path, process_gone: Any
) -> None:
    """Local cancel settles `aborted` with no diagnostic; dispose ends the child's command."""
    result = await _run(FAILURES[name], scripted_model, workspace)
    assert result.stop_reason == "aborted"
    assert result.diagnostic is None
    assert job_outcome(result).status_line == "[status: killed]"
    pid = int((workspace / marker).read_text(encoding="utf-8"))
    assert process_gone(pid)


STRUCTURE = {scenario.name: scenario for scenario in keyed(real=False)}
REAL = {scenario.name: scenario for scenario in keyed(real=True)}


@pytest.mark.parametrize("name", list(STRUCTURE))
async def test_keyed_scenario_structure_on_the_scripted_model(
    name: str, scripted_model: Any, workspace: Path
) -> None:
    """The keyed scenarios, with the scripted model standing in for DeepSeek."""
    result = await _run(STRUCTURE[name], scripted_model, workspace)
    assert result.stop_reason == "completed"


@pytest.mark.keyed
@pytest.mark.skipif(not has_api_key(), reason="needs DEEPSEEK_API_KEY")
@pytest.mark.parametrize("name", list(REAL))
async def test_keyed_scenario(name: str, scripted_model: Any, workspace: Path) -> None:
    result = await _run(REAL[name], scripted_model, workspace)
    assert result.stop_reason == "completed"


def test_the_scenario_graces_are_short(capsys: pytest.CaptureFixture[str]) -> None:
    from harness._scenarios import SHORT_GRACES

    assert SHORT_GRACES == (0.5, 0.5, 1.0)
    with capsys.disabled():
        eof, term, kill = SHORT_GRACES
        print(f"\nscenario graces: EOF {eof} s, TERM {term} s, KILL {kill} s")
