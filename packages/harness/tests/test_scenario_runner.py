"""The scenario runner's verdict: exit 0 only when every row matched; a mismatch shows why."""

from __future__ import annotations

import pytest
from harness._demo.runner import run_scenarios_cli
from harness._demo.scenario import Expectation, Scenario, ScenarioContext
from subagent_core import SubagentResult


@pytest.fixture(autouse=True)
def wide_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows on one line each, so a mismatch reads as one string."""
    monkeypatch.setenv("COLUMNS", "300")


FAILURE = "Subagent failure (provider: acp; stage: process; category: process-exit; exit code: 3)"


def _scenario(name: str, result: SubagentResult, expect: Expectation) -> Scenario:
    async def body(context: ScenarioContext) -> SubagentResult:
        return result

    return Scenario(name=name, rules=[], body=body, expect=expect)


def _crash_row(diagnostic: str | None) -> Scenario:
    return _scenario(
        "crash",
        SubagentResult(stop_reason="error", diagnostic=diagnostic),
        Expectation(stop_reason="error", diagnostic=FAILURE),
    )


def _file_row() -> Scenario:
    def wrote_file(context: ScenarioContext, result: SubagentResult) -> str | None:
        return None if (context.workspace / "proof.txt").exists() else "no proof.txt"

    async def body(context: ScenarioContext) -> SubagentResult:
        return SubagentResult(stop_reason="completed")

    return Scenario(
        name="side effect",
        rules=[],
        body=body,
        expect=Expectation(stop_reason="completed"),
        extra_check=wrote_file,
    )


def test_an_expected_failure_with_its_exact_diagnostic_matches(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_scenarios_cli([_crash_row(FAILURE)], title="t", live=False) == 0
    assert "1/1 scenarios matched" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("row", "why"),
    [
        (_crash_row(None), "expected a diagnostic"),
        (_crash_row(FAILURE.replace("3)", "4)")), "unexpected diagnostic"),
        (
            _scenario(
                "completes",
                SubagentResult(stop_reason="error"),
                Expectation(stop_reason="completed"),
            ),
            "expected stop reason completed",
        ),
        (_file_row(), "no proof.txt"),
    ],
)
def test_any_mismatch_is_exit_1(
    row: Scenario, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_scenarios_cli([_crash_row(FAILURE), row], title="t", live=False) == 1
    out = capsys.readouterr().out
    assert "1/2 scenarios matched" in out
    assert why in out


def test_a_raising_body_is_a_mismatch_row_not_a_crash(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def body(context: ScenarioContext) -> SubagentResult:
        raise RuntimeError("boom")

    row = Scenario(name="raises", rules=[], body=body, expect=Expectation(stop_reason="completed"))
    assert run_scenarios_cli([row], title="t", live=False) == 1
    assert "raised RuntimeError" in capsys.readouterr().out


def test_json_prints_one_object_per_row_then_the_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    rows = [_crash_row(FAILURE), _crash_row(None)]
    assert run_scenarios_cli(rows, title="t", live=True, json=True) == 1
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert records == [
        {
            "type": "scenario",
            "name": "crash",
            "stop_reason": "error",
            "output": "",
            "diagnostic": FAILURE,
            "matched": True,
            "mismatch": None,
        },
        {
            "type": "scenario",
            "name": "crash",
            "stop_reason": "error",
            "output": "",
            "diagnostic": None,
            "matched": False,
            "mismatch": "expected a diagnostic",
        },
        {"type": "summary", "matched": 1, "total": 2, "exit_code": 1},
    ]
