"""Errors and the start-error composition rules."""

from __future__ import annotations

import pytest
from subagent_core import SubagentError, SubagentStartError
from subagent_core.kit import aborted_before_start_text, compose_start_error

STARTUP = (
    "Subagent failure (provider: acp; stage: initialize; category: process-exit; exit code: 3)"
)
CLEANUP = "Subagent failure (provider: acp; stage: teardown; category: unknown; signal: SIGKILL)"


def test_subagent_error_carries_code_and_message() -> None:
    error = SubagentError("NO_PROVIDER", 'no subagent provider registered for "x"')
    assert error.code == "NO_PROVIDER"
    assert str(error) == 'no subagent provider registered for "x"'
    assert error.message == str(error)


def test_a_start_error_is_a_subagent_error_with_code_start_failed() -> None:
    error = SubagentStartError("fixed", None)
    assert isinstance(error, SubagentError)
    assert error.code == "START_FAILED"
    assert str(error) == "fixed"
    assert error.diagnostic is None
    with_diagnostic = SubagentStartError("ignored", STARTUP)
    assert str(with_diagnostic) == STARTUP
    assert with_diagnostic.diagnostic == STARTUP


@pytest.mark.parametrize("kind", ["ACP", "SDK"])
def test_aborted_before_start_text(kind: str) -> None:
    expected = f"subagent request was aborted before the {kind} child started"
    assert aborted_before_start_text(kind) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["ACP", "SDK"])
def test_cancelled_with_cleanup_confirmed_is_the_fixed_text_without_diagnostic(kind: str) -> None:
    error = compose_start_error(kind, cancelled=True, startup_line=STARTUP, cleanup_line=None)  # type: ignore[arg-type]
    assert str(error) == f"subagent request was aborted before the {kind} child started"
    assert error.diagnostic is None
    assert error.code == "START_FAILED"


def test_cancelled_with_cleanup_failed_is_the_cleanup_line_alone() -> None:
    error = compose_start_error("ACP", cancelled=True, startup_line=STARTUP, cleanup_line=CLEANUP)
    assert error.diagnostic == CLEANUP
    assert str(error) == CLEANUP


def test_a_failure_with_cleanup_confirmed_is_the_startup_line() -> None:
    error = compose_start_error("SDK", cancelled=False, startup_line=STARTUP, cleanup_line=None)
    assert error.diagnostic == STARTUP
    assert str(error) == STARTUP


def test_a_failure_with_cleanup_failed_is_startup_newline_cleanup() -> None:
    error = compose_start_error("ACP", cancelled=False, startup_line=STARTUP, cleanup_line=CLEANUP)
    assert error.diagnostic == f"{STARTUP}\n{CLEANUP}"
    assert str(error) == f"{STARTUP}\n{CLEANUP}"
