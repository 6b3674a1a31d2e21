"""The closed mappings of `_facts`, pure: ACP stop reasons and the kit's composition rules.

The same facts reached over real stdio, stage by stage, are `test_diagnostics.py`'s.
"""

from __future__ import annotations

import pytest
from subagent_acp._facts import map_stop_reason, result_diagnostic, teardown_line

REJECTED_EXECUTE = "ACP permission (policy: reject; tool kind: execute; decision: cancelled)"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("end_turn", ("completed", None)),
        ("max_tokens", ("max-tokens", None)),
        ("refusal", ("refusal", None)),
        ("cancelled", ("aborted", None)),
    ],
)
def test_stop_reason_mapping(value: str, expected: tuple[str, None]) -> None:
    assert map_stop_reason(value) == expected


@pytest.mark.parametrize("value", ["end_turn; category: none", "", "END_TURN", 7, None])
def test_unknown_stop_reasons_map_to_unknown(value: object) -> None:
    stop_reason, failure = map_stop_reason(value)
    assert stop_reason == "error"
    assert failure is not None
    assert (
        failure.line("acp") == "Subagent failure (provider: acp; stage: prompt; category: unknown)"
    )


def test_teardown_line() -> None:
    from subagent_core.kit import ProcessOutcome

    assert teardown_line("acp", None) == (
        "Subagent failure (provider: acp; stage: teardown; category: unknown)"
    )
    assert teardown_line("acp", ProcessOutcome(None, "SIGKILL")) == (
        "Subagent failure (provider: acp; stage: teardown; category: unknown; signal: SIGKILL)"
    )
    assert teardown_line("acp", ProcessOutcome(0, None)) == (
        "Subagent failure (provider: acp; stage: teardown; category: unknown; exit code: 0)"
    )


def test_result_diagnostic_rules() -> None:
    perm = REJECTED_EXECUTE
    assert result_diagnostic("acp", "completed", None, perm, None) is None
    assert result_diagnostic("acp", "completed", None, perm, perm) == perm
    assert result_diagnostic("acp", "refusal", None, None, None) is None
    assert result_diagnostic("acp", "max-tokens", None, perm, None) == perm
