"""The safe failure text: failure line, permission line, and the 4096-byte bound."""

from __future__ import annotations

import enum

import pytest
from hypothesis import given
from hypothesis import strategies as st
from subagent_core import DIAGNOSTIC_MAX_BYTES
from subagent_core.kit import bound_diagnostic, failure_line, permission_line, safe_tool_kind

MARKER = "\n[diagnostic truncated]"

# --- failure_line ------------------------------------------------------------------------------


def test_every_field_in_its_fixed_order() -> None:
    line = failure_line(
        "acp",
        "prompt",
        "remote-limit",
        stop_reason="max_turn_requests",
        exit_code=3,
        signal="SIGKILL",
    )
    assert line == (
        "Subagent failure (provider: acp; stage: prompt; category: remote-limit; "
        "stop reason: max_turn_requests; exit code: 3; signal: SIGKILL)"
    )


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "Subagent failure (provider: acp; stage: process; category: process-start)"),
        (
            {"exit_code": 3},
            "Subagent failure (provider: acp; stage: process; category: process-start; exit code: 3)",
        ),
        (
            {"exit_code": 0},
            "Subagent failure (provider: acp; stage: process; category: process-start; exit code: 0)",
        ),
        (
            {"signal": "SIGKILL"},
            "Subagent failure (provider: acp; stage: process; category: process-start; signal: SIGKILL)",
        ),
        (
            {"stop_reason": "error", "signal": "SIGTERM"},
            "Subagent failure (provider: acp; stage: process; category: process-start; "
            "stop reason: error; signal: SIGTERM)",
        ),
        (
            {"exit_code": -1, "signal": "SIGKILL"},
            "Subagent failure (provider: acp; stage: process; category: process-start; "
            "exit code: -1; signal: SIGKILL)",
        ),
    ],
)
def test_optional_fields_are_left_out_when_unknown(
    kwargs: dict[str, object], expected: str
) -> None:
    assert failure_line("acp", "process", "process-start", **kwargs) == expected  # type: ignore[arg-type]


def test_the_spec_examples() -> None:
    assert (
        failure_line("acp", "process", "process-exit", exit_code=3)
        == "Subagent failure (provider: acp; stage: process; category: process-exit; exit code: 3)"
    )
    assert (
        failure_line("dsh-sdk", "session-run", "child-error", stop_reason="error")
        == "Subagent failure (provider: dsh-sdk; stage: session-run; category: child-error; stop reason: error)"
    )
    assert (
        failure_line("acp", "teardown", "unknown", signal="SIGKILL")
        == "Subagent failure (provider: acp; stage: teardown; category: unknown; signal: SIGKILL)"
    )


# --- permission_line ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind",
    [
        "read",
        "edit",
        "delete",
        "move",
        "search",
        "execute",
        "think",
        "fetch",
        "switch_mode",
        "other",
    ],
)
def test_every_closed_tool_kind_is_kept(kind: str) -> None:
    line = permission_line("ACP", "allow", kind, "allow_once")
    assert line == f"ACP permission (policy: allow; tool kind: {kind}; decision: allow_once)"


@pytest.mark.parametrize(
    "kind", ["Execute", "rm -rf /", "", "read ", "exec\nute", "switch-mode", "x" * 5000]
)
def test_an_unknown_tool_kind_is_reported_as_other(kind: str) -> None:
    line = permission_line("ACP", "reject", kind, "cancelled")
    assert line == "ACP permission (policy: reject; tool kind: other; decision: cancelled)"


def test_the_spec_permission_example() -> None:
    assert (
        permission_line("ACP", "reject", "execute", "cancelled")
        == "ACP permission (policy: reject; tool kind: execute; decision: cancelled)"
    )
    assert (
        permission_line("ACP", "allow", "edit", "allow_always")
        == "ACP permission (policy: allow; tool kind: edit; decision: allow_always)"
    )


def test_optional_permission_fields_are_omitted_in_fixed_order() -> None:
    assert permission_line("ACP", "allow", None, "allow_once") == (
        "ACP permission (policy: allow; decision: allow_once)"
    )
    assert permission_line("ACP", "reject", "fetch", None) == (
        "ACP permission (policy: reject; tool kind: fetch)"
    )
    assert permission_line("ACP", "reject", None, None) == "ACP permission (policy: reject)"


class ToolKind(enum.Enum):
    EXECUTE = "execute"
    ROGUE = "launch_missiles"


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("execute", "execute"),
        (ToolKind.EXECUTE, "execute"),
        (ToolKind.ROGUE, "other"),
        (None, "other"),
        (42, "other"),
        ("nope", "other"),
    ],
)
def test_safe_tool_kind_maps_into_the_closed_set(kind: object, expected: str) -> None:
    assert safe_tool_kind(kind) == expected


# --- bound_diagnostic --------------------------------------------------------------------------


def test_the_bound_is_4096() -> None:
    assert DIAGNOSTIC_MAX_BYTES == 4096
    assert len(MARKER.encode()) == 23


def test_exactly_4096_bytes_are_returned_unchanged() -> None:
    text = "a" * 4096
    assert bound_diagnostic(text) == text
    multibyte = "é" * 2048  # 2 bytes each
    assert bound_diagnostic(multibyte) == multibyte


def test_4097_bytes_are_cut_at_4073_and_marked() -> None:
    bounded = bound_diagnostic("a" * 4097)
    assert bounded == "a" * 4073 + MARKER
    assert len(bounded.encode()) == 4096


def test_a_multibyte_text_is_cut_on_a_character_boundary() -> None:
    bounded = bound_diagnostic("权限" * 2000)
    assert len(bounded.encode()) == 4094
    assert bounded.endswith(MARKER)
    assert bounded == "权限" * 678 + "权" + MARKER


def test_four_byte_characters_are_not_split() -> None:
    bounded = bound_diagnostic("a" + "😀" * 2000)  # 1 + 4 * 1018 = 4073: a boundary
    assert bounded == "a" + "😀" * 1018 + MARKER
    bounded = bound_diagnostic("😀" * 2000)  # 4072 is the last boundary before 4073
    assert bounded == "😀" * 1018 + MARKER
    assert len(bounded.encode()) == 4095


def test_lone_surrogates_still_give_valid_bounded_utf8() -> None:
    short = bound_diagnostic("bad \ud800 surrogate")
    assert short == "bad ? surrogate"
    long = bound_diagnostic("\udfff" * 5000)
    assert long == "?" * 4073 + MARKER
    assert len(long.encode("utf-8")) == 4096


@given(st.text())
def test_the_bound_always_holds_on_valid_utf8(text: str) -> None:
    bounded = bound_diagnostic(text)
    data = bounded.encode("utf-8")  # strict: the result is always valid UTF-8
    assert len(data) <= DIAGNOSTIC_MAX_BYTES
    if len(text.encode()) <= DIAGNOSTIC_MAX_BYTES:
        assert bounded == text
    else:
        assert bounded.endswith(MARKER)
        kept = bounded[: -len(MARKER)]
        # A whole-character prefix: no character was split or replaced.
        assert text.startswith(kept)
        assert len(kept.encode()) <= 4073
        assert len(kept.encode()) > 4073 - 4  # moved left by less than one character


@given(
    st.lists(st.sampled_from(["a", "é", "权", "😀", "\n", " "]), min_size=1, max_size=40),
    st.integers(min_value=1000, max_value=5000),
)
def test_the_bound_holds_around_the_cut_for_mixed_widths(pattern: list[str], length: int) -> None:
    """Long texts of mixed character widths, so the cut lands on every kind of byte."""
    text = ("".join(pattern) * length)[:length]
    bounded = bound_diagnostic(text)
    assert len(bounded.encode()) <= DIAGNOSTIC_MAX_BYTES
    if len(text.encode()) > DIAGNOSTIC_MAX_BYTES:
        kept = bounded.removesuffix(MARKER)
        assert text.startswith(kept)
        assert len(kept.encode()) > 4073 - 4
    else:
        assert bounded == text


@given(st.text(alphabet=st.characters(categories=["Cs", "Ll", "Lo"])))
def test_the_bound_holds_with_surrogates(text: str) -> None:
    bounded = bound_diagnostic(text)
    assert len(bounded.encode("utf-8")) <= DIAGNOSTIC_MAX_BYTES
