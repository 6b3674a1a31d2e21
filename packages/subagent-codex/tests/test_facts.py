"""The closed mapping of `_facts`: every way a turn ends, on exact diagnostics through the
fake app-server, and total and safe under hypothesis: whatever the child reports, the text is
closed vocabulary."""

from __future__ import annotations

import re

import pytest
import subagent_codex
import subagent_codex.testing
from hypothesis import assume, given
from hypothesis import strategies as st
from subagent_codex._facts import Failure, map_failed_turn, result_diagnostic

_FAILURE = (
    r"Subagent failure \(provider: codex; stage: (?:initialize|prompt|process|teardown); "
    r"category: (?:authentication|configuration|transport|protocol|process-exit|process-start|"
    r"remote-limit|timeout|upstream|output-schema|unknown)"
    r"(?:; stop reason: [a-z-]+)?(?:; exit code: -?\d+)?(?:; signal: SIG[A-Z0-9]+)?\)"
)
_PERMISSION = (
    r"Codex permission \(policy: (?:allow|reject|ask); "
    r"tool kind: (?:read|edit|delete|move|search|execute|think|fetch|switch_mode|other); "
    r"decision: (?:allow_once|allow_always|reject_once|reject_always|cancelled)\)"
)
DIAGNOSTIC = re.compile(rf"(?:{_FAILURE}(?:\n{_PERMISSION})?|{_PERMISSION})")
PROMPT_FAILURE = "Subagent failure (provider: codex; stage: prompt; category: "
_LIMIT_REASONS = {
    "usage-limit-exceeded",
    "rate-limit-exceeded",
    "session-budget-exceeded",
    "too-many-denials",
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=20), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(json_values)
def test_any_error_info_maps_into_the_grammar(info: object) -> None:
    stop_reason, failure = map_failed_turn(info)
    assert stop_reason in ("error", "max-tokens", "refusal")
    diagnostic = result_diagnostic("codex", stop_reason, failure, None, None)
    if diagnostic is not None:
        assert DIAGNOSTIC.fullmatch(diagnostic), diagnostic
    if failure is not None and failure.stop_reason is not None:
        assert failure.stop_reason in _LIMIT_REASONS


@given(st.text(min_size=8, max_size=30).filter(lambda s: s.isalnum()))
def test_no_unknown_variant_is_copied(name: str) -> None:
    # A name that is itself a word of the fixed line ("provider", "category") proves nothing.
    assume(name not in Failure("prompt", "unknown").line("codex"))
    for info in (name, {name: {"httpStatusCode": 500}}):
        _, failure = map_failed_turn(info)
        if failure is not None and failure.category == "unknown":
            assert name not in failure.line("codex")


def test_a_failure_line_carries_the_observed_figures() -> None:
    from subagent_core.kit import ProcessOutcome

    line = Failure(
        "process", "process-exit", outcome=ProcessOutcome(exit_code=None, signal="SIGKILL")
    )
    assert line.line("codex") == (
        "Subagent failure (provider: codex; stage: process; category: process-exit; signal: SIGKILL)"
    )


def test_public_names() -> None:
    assert subagent_codex.__all__ == ["CodexConfig", "CodexProvider", "Sandbox"]
    for name in subagent_codex.testing.__all__:
        assert hasattr(subagent_codex.testing, name)


# -- every way a turn ends, through the fake --------------------------------------------------


@pytest.mark.parametrize(
    ("info", "stop_reason", "diagnostic"),
    [
        ("contextWindowExceeded", "max-tokens", None),
        (
            "usageLimitExceeded",
            "error",
            PROMPT_FAILURE + "remote-limit; stop reason: usage-limit-exceeded)",
        ),
        (
            "rateLimitExceeded",
            "error",
            PROMPT_FAILURE + "remote-limit; stop reason: rate-limit-exceeded)",
        ),
        (
            "sessionBudgetExceeded",
            "error",
            PROMPT_FAILURE + "remote-limit; stop reason: session-budget-exceeded)",
        ),
        (
            "tooManyDenials",
            "error",
            PROMPT_FAILURE + "remote-limit; stop reason: too-many-denials)",
        ),
        ("cyberPolicy", "refusal", None),
        ("misalignmentPolicyViolation", "refusal", None),
        ("serverOverloaded", "error", PROMPT_FAILURE + "upstream)"),
        ("internalServerError", "error", PROMPT_FAILURE + "upstream)"),
        ({"httpConnectionFailed": {"httpStatusCode": 502}}, "error", PROMPT_FAILURE + "upstream)"),
        (
            {"responseStreamDisconnected": {"httpStatusCode": None}},
            "error",
            PROMPT_FAILURE + "upstream)",
        ),
        (
            {"responseTooManyFailedAttempts": {"httpStatusCode": 500}},
            "error",
            PROMPT_FAILURE + "upstream)",
        ),
        ("unauthorized", "error", PROMPT_FAILURE + "authentication)"),
        (
            {"httpConnectionFailed": {"httpStatusCode": 403}},
            "error",
            PROMPT_FAILURE + "authentication)",
        ),
        ("badRequest", "error", PROMPT_FAILURE + "unknown)"),
        ("sk-SECRET-novel-variant", "error", PROMPT_FAILURE + "unknown)"),
        ({"sk-SECRET": {"httpStatusCode": 500}}, "error", PROMPT_FAILURE + "unknown)"),
        (None, "error", PROMPT_FAILURE + "unknown)"),
    ],
)
async def test_every_failed_turn_maps(fake_config, run_once, info, stop_reason, diagnostic) -> None:
    scenario = {"turn": [{"delta": "part"}, {"complete": "failed", "info": info}]}
    result, _, _ = await run_once(fake_config(scenario))
    assert (result.stop_reason, result.diagnostic, result.output) == (
        stop_reason,
        diagnostic,
        "part",
    )


async def test_an_unauthorized_error_frame_settles_before_the_retries(
    fake_config, run_once
) -> None:
    scenario = {
        "turn": [
            {
                "error": {"responseStreamDisconnected": {"httpStatusCode": 401}},
                "willRetry": True,
                "message": "sk-SECRET in the message",
                "details": "sk-SECRET in the details",
            },
            {"hang": True},
        ]
    }
    result, disposed, events = await run_once(fake_config(scenario))
    assert (result.stop_reason, result.diagnostic) == ("error", PROMPT_FAILURE + "authentication)")
    assert disposed is None
    assert "sk-SECRET" not in repr(events)


async def test_a_remote_interrupt_is_a_remote_abort(fake_config, run_once) -> None:
    result, _, _ = await run_once(fake_config({"turn": [{"complete": "interrupted"}]}))
    assert (result.stop_reason, result.diagnostic) == (
        "aborted",
        PROMPT_FAILURE + "unknown; stop reason: interrupted)",
    )


async def test_an_unknown_turn_status_is_unknown(fake_config, run_once) -> None:
    result, _, _ = await run_once(fake_config({"turn": [{"complete": "sk-SECRET-status"}]}))
    assert (result.stop_reason, result.diagnostic) == ("error", PROMPT_FAILURE + "unknown)")
