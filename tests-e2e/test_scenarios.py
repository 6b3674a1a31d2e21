"""The demo's and `harness e2e`'s scenarios as tests, plus the pinned presentation strings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness._demo.bodies import (
    ACP_CANCEL_MARKER,
    ACP_CRASH,
    ACP_FAILURE,
    CHILD_STDERR,
    SDK_CANCEL_MARKER,
    SDK_FAILURE,
    SECRET,
    demo,
    failures,
)
from harness._demo.keyed import keyed
from harness._demo.runner import run_one
from harness._demo.scenario import Scenario, ScenarioContext, check, has_api_key
from subagent_core import SubagentResult, foreground_text, job_outcome

DEMO = {scenario.name: scenario for scenario in demo()}
FAILURES = {scenario.name: scenario for scenario in failures()}
ALL = DEMO | FAILURES
CRASH = "acp: child crashes mid-prompt, secret on stderr"
FAILED_TURN = "sdk: sdk-runtime turn fails, secret in model error"


async def _run(scenario: Scenario, scripted_model: Any, workspace: Path) -> SubagentResult:
    with anyio.fail_after(90):
        async with scripted_model(scenario.rules) as server:
            context = ScenarioContext(
                base_url=server.base_url, workspace=workspace, state_dir=workspace.parent / "state"
            )
            outcome = await run_one(scenario, context)
    assert outcome.mismatch is None, outcome
    return outcome.result


def test_the_demo_shows_the_happy_paths_and_the_safety() -> None:
    expected = {name: (s.expect.stop_reason, s.expect.diagnostic) for name, s in DEMO.items()}
    assert expected == {
        "agent: command + in-process child": ("completed", None),
        "acp: fake ACP child": ("completed", None),
        "acp: harness acp-agent": ("completed", None),
        "sdk: fake SDK runtime": ("completed", None),
        "codex: fake app-server": ("completed", None),
        "claude: fake Claude CLI": ("completed", None),
        "claude: Write refused by the default policy": (
            "completed",
            "Claude permission (policy: reject; tool kind: edit; decision: reject_once)",
        ),
        "sdk: harness sdk-runtime": ("completed", None),
        CRASH: ("error", ACP_CRASH),
        FAILED_TURN: ("error", SDK_FAILURE),
        "acp: cancel stops the child's command": ("aborted", None),
    }


SELF_HOSTED = {"acp: harness acp-agent": "acp", "sdk: harness sdk-runtime": "sdk"}


@pytest.mark.parametrize("name", list(DEMO))
async def test_demo_scenario(name: str, scripted_model: Any, workspace: Path) -> None:
    scenario = DEMO[name]
    result = await _run(scenario, scripted_model, workspace)
    assert result.stop_reason == scenario.expect.stop_reason
    assert result.diagnostic == scenario.expect.diagnostic
    assert SECRET not in repr(result)
    if name in SELF_HOSTED:
        # The child kept its session in the scenario's state dir, not the user's.
        sessions = workspace.parent / "state" / "sessions" / SELF_HOSTED[name]
        assert len(list(sessions.glob("*.json"))) == 1


async def test_a_crashing_child_s_stderr_reaches_nothing(
    scripted_model: Any, workspace: Path
) -> None:
    """The child wrote the secret on stderr and exited 3 mid-prompt: only the safe line is left."""
    result = await _run(DEMO[CRASH], scripted_model, workspace)
    assert result == SubagentResult(
        stop_reason="error", output="Working on it", diagnostic=ACP_CRASH
    )
    assert ACP_CRASH == (
        "Subagent failure (provider: acp; stage: process; category: process-exit; exit code: 3)"
    )
    assert f"token={SECRET}" in (workspace / CHILD_STDERR).read_text(encoding="utf-8")
    assert SECRET not in foreground_text(result).text
    assert SECRET not in job_outcome(result).status_line


def test_the_demo_s_checks_catch_a_leak_and_a_live_command(workspace: Path) -> None:
    """The expectations can fail: a leaked secret or a command left running is a mismatch."""
    context = ScenarioContext(
        base_url="http://127.0.0.1:9", workspace=workspace, state_dir=workspace.parent / "state"
    )
    (workspace / CHILD_STDERR).write_text(f"token={SECRET}", encoding="utf-8")
    leaked = SubagentResult(stop_reason="error", output=f"oops {SECRET}", diagnostic=ACP_CRASH)
    assert check(DEMO[CRASH], context, leaked) == "the child's secret reached the result"
    leaked = SubagentResult(stop_reason="error", output=SECRET, diagnostic=SDK_FAILURE)
    assert check(DEMO[FAILED_TURN], context, leaked) == "the child's secret reached the result"
    (workspace / ACP_CANCEL_MARKER).write_text(str(os.getpid()), encoding="utf-8")
    aborted = SubagentResult(stop_reason="aborted")
    assert check(DEMO["acp: cancel stops the child's command"], context, aborted) == (
        f"the child's command (pid {os.getpid()}) is still running"
    )
    ended = SubagentResult(stop_reason="completed", output="x")
    assert check(DEMO[CRASH], context, ended) == "expected stop reason error"


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
    result = await _run(DEMO[FAILED_TURN], scripted_model, workspace)
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
        ("acp: cancel stops the child's command", ACP_CANCEL_MARKER),
        ("sdk: cancel stops the child's command", SDK_CANCEL_MARKER),
    ],
)
async def test_cancel_reaches_the_childs_command(
    name: str, marker: str, scripted_model: Any, workspace: Path, process_gone: Any
) -> None:
    """Local cancel settles `aborted` with no diagnostic; dispose ends the child's command."""
    result = await _run(ALL[name], scripted_model, workspace)
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
    from harness._demo.scenario import SHORT_GRACES

    assert SHORT_GRACES == (0.5, 0.5, 1.0)
    with capsys.disabled():
        eof, term, kill = SHORT_GRACES
        print(f"\nscenario graces: EOF {eof} s, TERM {term} s, KILL {kill} s")
