"""The provider-neutral permission gate: policies, per-kind policies, callbacks, the safe record."""

from __future__ import annotations

import pytest
from subagent_core import READS_POLICY, PermissionAsk, PermissionEvent, SubagentEvent
from subagent_core.kit import PermissionGate, check_permission

OFFERED = ("allow_once", "reject_once")


def _gate(setting: object, *, reject_with_option: bool = True, protocol: str = "Claude"):
    events: list[SubagentEvent] = []
    gate = PermissionGate(
        check_permission(setting, owner="Test"),
        protocol,  # type: ignore[arg-type]
        events.append,
        reject_with_option=reject_with_option,
    )
    return gate, events


async def test_allow_prefers_a_one_time_allow_over_an_always_offered_first() -> None:
    gate, events = _gate("allow")
    assert (
        await gate.decide(
            "edit", ("reject_once", "allow_always", "allow_once"), title=None, raw_input=None
        )
        == "allow_once"
    )
    assert gate.line == "Claude permission (policy: allow; tool kind: edit; decision: allow_once)"
    assert gate.refused is None
    assert events == [PermissionEvent(tool_kind="edit", policy="allow", decision="allow_once")]


async def test_allow_takes_allow_always_when_it_is_the_only_allow_offered() -> None:
    gate, _ = _gate("allow")
    assert (
        await gate.decide("edit", ("reject_once", "allow_always"), title=None, raw_input=None)
        == "allow_always"
    )


async def test_reject_answers_with_a_reject_option_or_cancelled() -> None:
    gate, _ = _gate("reject")
    assert await gate.decide("execute", OFFERED, title=None, raw_input=None) == "reject_once"
    assert (
        gate.refused
        == "Claude permission (policy: reject; tool kind: execute; decision: reject_once)"
    )
    acp, _ = _gate("reject", reject_with_option=False, protocol="ACP")
    assert await acp.decide("execute", OFFERED, title=None, raw_input=None) is None
    assert acp.refused == "ACP permission (policy: reject; tool kind: execute; decision: cancelled)"


async def test_a_per_kind_policy_decides_by_kind_and_records_the_fixed_answer() -> None:
    gate, events = _gate({"read": "allow", "*": "reject"}, protocol="Codex")
    assert await gate.decide("read", OFFERED, title=None, raw_input=None) == "allow_once"
    assert await gate.decide("execute", OFFERED, title=None, raw_input=None) == "reject_once"
    assert (
        gate.line == "Codex permission (policy: reject; tool kind: execute; decision: reject_once)"
    )
    assert [e.policy for e in events if isinstance(e, PermissionEvent)] == ["allow", "reject"]


async def test_a_per_kind_policy_without_a_default_rejects_unnamed_kinds() -> None:
    gate, _ = _gate({"read": "allow"})
    assert await gate.decide("fetch", OFFERED, title=None, raw_input=None) == "reject_once"


async def test_the_reads_policy_allows_reads_and_searches_only() -> None:
    gate, _ = _gate(READS_POLICY)
    decisions = [
        await gate.decide(kind, OFFERED, title=None, raw_input=None)
        for kind in ("read", "search", "edit", "execute", "other")
    ]
    assert decisions == ["allow_once", "allow_once", "reject_once", "reject_once", "reject_once"]


async def test_an_unknown_kind_is_other_in_the_line_and_the_event() -> None:
    gate, events = _gate({"other": "allow", "*": "reject"})
    assert (
        await gate.decide("mcp__secret_tool", OFFERED, title=None, raw_input=None) == "allow_once"
    )
    assert gate.line == "Claude permission (policy: allow; tool kind: other; decision: allow_once)"
    assert events == [PermissionEvent(tool_kind="other", policy="allow", decision="allow_once")]


async def test_a_callback_sees_closed_facts_and_its_answer_is_used() -> None:
    asks: list[PermissionAsk] = []

    async def ask(question: PermissionAsk) -> str | None:
        asks.append(question)
        return "allow_once"

    gate, _ = _gate(ask)
    assert (
        await gate.decide("weird", (*OFFERED, "bogus"), title="t", raw_input={"a": 1})
        == "allow_once"
    )
    assert asks == [
        PermissionAsk(tool_kind="other", option_kinds=OFFERED, title="t", raw_input={"a": 1})
    ]
    assert gate.line == "Claude permission (policy: ask; tool kind: other; decision: allow_once)"


@pytest.mark.parametrize("answer", [None, "allow_always", 3, ["allow_once"]])
async def test_a_callback_answer_not_offered_is_cancelled(answer: object) -> None:
    async def ask(question: PermissionAsk) -> object:
        return answer

    gate, _ = _gate(ask)
    assert await gate.decide("edit", OFFERED, title=None, raw_input=None) is None
    assert gate.refused == "Claude permission (policy: ask; tool kind: edit; decision: cancelled)"


async def test_a_raising_callback_is_cancelled() -> None:
    async def ask(question: PermissionAsk) -> str | None:
        raise RuntimeError("secret-value")

    gate, _ = _gate(ask)
    assert await gate.decide("edit", OFFERED, title=None, raw_input=None) is None
    assert "secret" not in (gate.line or "")


async def test_after_settlement_decisions_are_made_but_not_recorded() -> None:
    gate, events = _gate("allow")
    gate.recording = False
    assert await gate.decide("edit", OFFERED, title=None, raw_input=None) == "allow_once"
    assert gate.line is None
    assert events == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"exec": "allow"}, "Test.permission keys must be tool kinds"),
        ({"read": "yes"}, 'Test.permission values must be "allow" or "reject"'),
        ({1: "allow"}, "Test.permission keys must be tool kinds"),
        ("ask", 'Test.permission must be "allow", "reject"'),
        (None, 'Test.permission must be "allow", "reject"'),
    ],
)
def test_invalid_settings_are_value_errors(value: object, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        check_permission(value, owner="Test")
    assert str(caught.value).startswith(message)


def test_a_policy_mapping_is_copied_read_only() -> None:
    source = {"read": "allow", "*": "reject"}
    checked = check_permission(source, owner="Test")
    source["*"] = "allow"
    assert dict(checked) == {"read": "allow", "*": "reject"}  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        checked["read"] = "reject"  # type: ignore[index]
