"""The mapping is total and its text stays in the closed grammar, whatever the runtime sends."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from subagent_sdk._facts import error_category, turn_end_result
from subagent_sdk.client import (
    JSONRPCError,
    RequestTimeoutError,
    SDKError,
    SDKProtocolError,
    TransportClosedError,
    TurnEnd,
)

_LINE = re.compile(
    r"Subagent failure \(provider: dsh-sdk; stage: session-run; category: "
    r"(child-error; stop reason: error|child-disposed; stop reason: aborted|child-unknown|missing-terminal)\)"
)

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=12,
)
_reasons = _json | st.fixed_dictionaries(
    {
        "kind": st.sampled_from(
            ["completed", "max-tokens", "aborted", "blocked", "error", "interrupted"]
        )
        | st.text()
    },
    optional={
        "reason": st.fixed_dictionaries(
            {"kind": st.text() | st.sampled_from(["disposed", "user"])}
        ),
        "error": _json,
    },
)


@given(_reasons)
def test_any_turn_end_maps_into_the_closed_grammar(reason: object) -> None:
    stop_reason, diagnostic = turn_end_result("dsh-sdk", TurnEnd.parse(reason))  # type: ignore[arg-type]
    assert stop_reason in ("completed", "max-tokens", "refusal", "aborted", "error")
    if diagnostic is not None:
        assert _LINE.fullmatch(diagnostic)
    if stop_reason == "completed":
        assert diagnostic is None


def test_missing_turn_end_and_error_classes() -> None:
    assert turn_end_result("p", None) == (
        "error",
        "Subagent failure (provider: p; stage: session-run; category: missing-terminal)",
    )
    assert error_category(SDKProtocolError("x")) == "protocol"
    assert error_category(JSONRPCError(-32603, "x")) == "protocol"
    assert error_category(TransportClosedError("x")) == "transport"
    assert error_category(RequestTimeoutError("x")) == "timeout"
    assert error_category(SDKError("x")) == "unknown"
    assert error_category(ValueError("protocol transport")) == "unknown"
