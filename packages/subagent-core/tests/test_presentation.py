"""foreground_text and job_outcome: exact texts for every stop reason and composition."""

from __future__ import annotations

import pytest
from subagent_core import JobOutcome, SubagentResult, ToolText, foreground_text, job_outcome

DIAG = "Subagent failure (provider: acp; stage: process; category: process-exit; exit code: 3)"


def result(reason: str, output: str = "", diagnostic: str | None = None) -> SubagentResult:
    return SubagentResult(stop_reason=reason, output=output, diagnostic=diagnostic)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reason", "headline"),
    [
        ("aborted", "subagent run was cancelled"),
        ("error", "subagent run failed"),
        ("max-tokens", "subagent run hit its token limit before finishing"),
        ("refusal", "subagent declined the task"),
        ("timed-out", "subagent run ended abnormally (timed-out)"),
        ("", "subagent run ended abnormally ()"),
    ],
)
def test_every_headline(reason: str, headline: str) -> None:
    assert foreground_text(result(reason)) == ToolText(headline, True)
    assert foreground_text(result(reason, diagnostic=DIAG)) == ToolText(
        f"{headline}\nDiagnostic: {DIAG}", True
    )
    assert foreground_text(result(reason, output="half an answer")) == ToolText(
        f"{headline}\nPartial output before the run ended:\nhalf an answer", True
    )
    assert foreground_text(result(reason, "half\nan answer", DIAG)) == ToolText(
        f"{headline}\nDiagnostic: {DIAG}\nPartial output before the run ended:\nhalf\nan answer",
        True,
    )


def test_completed_shows_only_the_output() -> None:
    assert foreground_text(result("completed", "the answer")) == ToolText("the answer", False)
    assert foreground_text(result("completed")) == ToolText("", False)


def test_the_exact_error_composition() -> None:
    text = foreground_text(result("error", "partial", "D")).text
    assert text == (
        "subagent run failed\nDiagnostic: D\nPartial output before the run ended:\npartial"
    )


@pytest.mark.parametrize(
    ("res", "expected", "status_line"),
    [
        (
            result("completed", "out"),
            JobOutcome("completed", "out", None),
            "[status: completed]",
        ),
        (result("aborted", "part"), JobOutcome("killed", "part", None), "[status: killed]"),
        (
            result("aborted", "part", "ACP permission (policy: reject)"),
            JobOutcome("failed", "part", "aborted; diagnostic: ACP permission (policy: reject)"),
            "[status: failed, aborted; diagnostic: ACP permission (policy: reject)]",
        ),
        (result("error"), JobOutcome("failed", "", "error"), "[status: failed, error]"),
        (
            result("error", "x", DIAG),
            JobOutcome("failed", "x", f"error; diagnostic: {DIAG}"),
            f"[status: failed, error; diagnostic: {DIAG}]",
        ),
        (
            result("max-tokens", "long"),
            JobOutcome("failed", "long", "max-tokens"),
            "[status: failed, max-tokens]",
        ),
        (result("refusal"), JobOutcome("failed", "", "refusal"), "[status: failed, refusal]"),
        (
            result(
                "refusal",
                "",
                "ACP permission (policy: reject; tool kind: execute; decision: cancelled)",
            ),
            JobOutcome(
                "failed",
                "",
                "refusal; diagnostic: ACP permission (policy: reject; tool kind: execute; decision: cancelled)",
            ),
            "[status: failed, refusal; diagnostic: ACP permission (policy: reject; tool kind: execute; decision: cancelled)]",
        ),
        (
            result("mystery", "m"),
            JobOutcome("failed", "m", "mystery"),
            "[status: failed, mystery]",
        ),
    ],
)
def test_every_job_outcome_row(res: SubagentResult, expected: JobOutcome, status_line: str) -> None:
    outcome = job_outcome(res)
    assert outcome == expected
    assert outcome.status_line == status_line
    assert outcome.output == res.output  # the diagnostic never lands in the output


def test_the_diagnostic_is_never_appended_to_the_output() -> None:
    res = result("error", "partial", DIAG)
    assert foreground_text(res).text.startswith("subagent run failed\nDiagnostic: ")
    assert job_outcome(res).output == "partial"
