"""The mapping is total and safe: whatever the child reports, the text is closed vocabulary."""

from __future__ import annotations

import re

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
