"""Every row of the spec's mapping, on exact diagnostics, through the fake CLI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from subagent_claude import ClaudeConfig

MakeConfig = Callable[..., ClaudeConfig]
P = "Subagent failure (provider: claude; stage: prompt; category: "


@pytest.mark.parametrize(
    ("script", "stop_reason", "diagnostic"),
    [
        ({}, "completed", None),
        ({"result": {"stop_reason": "stop_sequence"}}, "completed", None),
        ({"result": {"stop_reason": None}}, "completed", None),
        ({"result": {"stop_reason": "refusal", "is_error": True}}, "refusal", None),
        ({"result": {"stop_reason": "max_tokens"}}, "max-tokens", None),
        (
            {"assistant_error": "max_output_tokens", "result": {"is_error": True}},
            "max-tokens",
            None,
        ),
        (
            {"result": {"subtype": "error_max_turns", "is_error": True}},
            "error",
            P + "remote-limit; stop reason: error_max_turns)",
        ),
        (
            {"result": {"subtype": "error_max_budget_usd", "is_error": True}},
            "error",
            P + "remote-limit; stop reason: error_max_budget_usd)",
        ),
        (
            {"result": {"subtype": "error_max_structured_output_retries", "is_error": True}},
            "error",
            P + "output-schema)",
        ),
        (
            {"result": {"subtype": "error_during_execution", "terminal_reason": "aborted_tools"}},
            "aborted",
            P + "unknown; stop reason: aborted)",
        ),
        ({"assistant_error": "authentication_failed"}, "error", P + "authentication)"),
        ({"result": {"is_error": True, "api_error_status": 403}}, "error", P + "authentication)"),
        (
            {"assistant_error": "billing_error", "result": {"is_error": True}},
            "error",
            P + "remote-limit)",
        ),
        (
            {"assistant_error": "rate_limit", "result": {"is_error": True}},
            "error",
            P + "remote-limit)",
        ),
        ({"result": {"is_error": True, "api_error_status": 429}}, "error", P + "remote-limit)"),
        (
            {"assistant_error": "server_error", "result": {"is_error": True}},
            "error",
            P + "upstream)",
        ),
        ({"result": {"is_error": True, "api_error_status": 529}}, "error", P + "upstream)"),
        (
            {"result": {"is_error": True, "terminal_reason": "api_error"}},
            "error",
            P + "upstream)",
        ),
        ({"result": {"subtype": "error_brand_new", "is_error": True}}, "error", P + "unknown)"),
        ({"result": {"stop_reason": "pause_turn_SECRET"}}, "error", P + "unknown)"),
    ],
)
async def test_result_mapping(
    fake_config: MakeConfig,
    run_once: Any,
    in_grammar: Callable[[str | None], bool],
    script: dict[str, Any],
    stop_reason: str,
    diagnostic: str | None,
) -> None:
    result, disposed = await run_once(fake_config(script))
    assert (result.stop_reason, result.diagnostic) == (stop_reason, diagnostic)
    assert in_grammar(result.diagnostic)
    assert disposed is None
    if stop_reason != "completed":
        assert "API Error" not in result.output


async def test_api_retry_401_settles_before_any_result(
    fake_config: MakeConfig, run_once: Any
) -> None:
    result, disposed = await run_once(fake_config({"api_retry_status": 401}), seconds=10)
    assert (result.stop_reason, result.diagnostic) == ("error", P + "authentication)")
    assert disposed is None


async def test_api_retry_503_keeps_waiting_for_the_result(
    fake_config: MakeConfig, run_once: Any
) -> None:
    script = {"api_retry_status": 503, "hang_at": "prompt"}
    result, _ = await run_once(fake_config(script, idle_timeout_seconds=0.5), seconds=10)
    assert (result.stop_reason, result.diagnostic) == ("error", P + "timeout)")


async def test_error_carries_the_permission_line(fake_config: MakeConfig, run_once: Any) -> None:
    script = {
        "tool": {"name": "Bash", "input": {"command": "rm -rf /SECRET"}},
        "result": {"subtype": "error_max_turns", "is_error": True},
    }
    result, _ = await run_once(fake_config(script))
    assert result.diagnostic == (
        P + "remote-limit; stop reason: error_max_turns)\n"
        "Claude permission (policy: reject; tool kind: execute; decision: reject_once)"
    )


async def test_refusal_carries_the_permission_line_alone(
    fake_config: MakeConfig, run_once: Any
) -> None:
    script = {
        "tool": {"name": "WebFetch", "input": {"url": "http://SECRET"}},
        "result": {"stop_reason": "refusal", "is_error": True},
    }
    result, _ = await run_once(fake_config(script))
    assert (result.stop_reason, result.diagnostic) == (
        "refusal",
        "Claude permission (policy: reject; tool kind: fetch; decision: reject_once)",
    )


@pytest.mark.parametrize(
    ("tool", "kind"),
    [
        ("Bash", "execute"),
        ("Edit", "edit"),
        ("Write", "edit"),
        ("MultiEdit", "edit"),
        ("NotebookEdit", "edit"),
        ("Read", "read"),
        ("Glob", "search"),
        ("Grep", "search"),
        ("WebFetch", "fetch"),
        ("WebSearch", "fetch"),
        ("mcp__server__tool", "other"),
        ("Task", "other"),
    ],
)
async def test_tool_kinds(fake_config: MakeConfig, run_once: Any, tool: str, kind: str) -> None:
    script = {"tool": {"name": tool, "input": {"file_path": "/nonexistent/SECRET"}}}
    result, _ = await run_once(fake_config(script))
    assert result.diagnostic == (
        f"Claude permission (policy: reject; tool kind: {kind}; decision: reject_once)"
    )


async def test_per_kind_policy(fake_config: MakeConfig, run_once: Any) -> None:
    policy = {"read": "allow", "search": "allow", "*": "reject"}
    read, _ = await run_once(
        fake_config({"tool": {"name": "Read", "input": {}}}, permission=policy)
    )
    assert read.diagnostic is None
    bash, _ = await run_once(
        fake_config({"tool": {"name": "Bash", "input": {}}}, permission=policy)
    )
    assert bash.diagnostic == (
        "Claude permission (policy: reject; tool kind: execute; decision: reject_once)"
    )


@pytest.mark.parametrize("answer", [None, "reject_once", "allow_always", "bogus"])
async def test_callback_refusals_are_cancelled_or_rejected(
    fake_config: MakeConfig, run_once: Any, answer: str | None
) -> None:
    async def callback(ask: Any) -> str | None:
        return answer

    result, _ = await run_once(
        fake_config({"tool": {"name": "Bash", "input": {}}}, permission=callback)
    )
    decision = "reject_once" if answer == "reject_once" else "cancelled"
    assert result.diagnostic == (
        f"Claude permission (policy: ask; tool kind: execute; decision: {decision})"
    )


async def test_callback_that_raises_is_cancelled(fake_config: MakeConfig, run_once: Any) -> None:
    async def callback(ask: Any) -> str | None:
        raise RuntimeError("SECRET")

    result, _ = await run_once(
        fake_config({"tool": {"name": "Edit", "input": {}}}, permission=callback)
    )
    assert result.diagnostic == (
        "Claude permission (policy: ask; tool kind: edit; decision: cancelled)"
    )
