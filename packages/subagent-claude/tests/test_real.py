"""The real Claude Code CLI (the `[cli]` extra) against the loopback Messages stub, keyless.

Every case of the issue's "Must hold" list that concerns the real CLI: the stub on 127.0.0.1
is the only remote service, `HOME` and `CLAUDE_CONFIG_DIR` are throwaway, and the key is a
dummy given explicitly through `env` (or none at all).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_claude.testing import (
    MessagesStub,
    error_turn,
    stall_turn,
    text_turn,
    tool_turn,
)
from subagent_core import (
    MessageChunk,
    PermissionAsk,
    PermissionEvent,
    SubagentRegistry,
    SubagentRequest,
    ToolCallEvent,
    UsageEvent,
)

RealConfig = Callable[..., ClaudeConfig]
SECRET = "SECRET-body-4c1d"


def _workspace(config: ClaudeConfig) -> Path:
    assert config.cwd is not None
    return config.cwd


def _safe_fields(result: Any, events: list[Any]) -> str:
    """Everything a model or a log of safe facts could see."""
    parts = [result.output, result.diagnostic or "", repr(result.usage)]
    for event in events:
        if isinstance(event, PermissionEvent | UsageEvent):
            parts.append(repr(event))
        elif isinstance(event, ToolCallEvent):
            parts.append(repr((event.kind, event.status, event.exit_code)))
    return "\n".join(parts)


async def test_text_completes_with_exact_usage_and_cost(
    real_config: RealConfig, run_once: Any
) -> None:
    events: list[Any] = []
    turn = text_turn("PONG", input_tokens=11, output_tokens=7, cache_read_input_tokens=5)
    with MessagesStub([turn]) as stub:
        result, disposed = await run_once(real_config(stub), events=events)
    assert (result.stop_reason, result.output, result.diagnostic, disposed) == (
        "completed",
        "PONG",
        None,
        None,
    )
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (11, 7)
    assert result.usage.cached_input_tokens == 5
    assert result.usage.cost is not None
    assert result.usage.cost.currency == "USD"
    assert result.usage.cost.amount == pytest.approx(0.000185)  # the CLI's price for these counts
    assert "".join(e.text for e in events if isinstance(e, MessageChunk)) == "PONG"
    usage_events = [e for e in events if isinstance(e, UsageEvent)]
    assert (usage_events[-1].input_tokens, usage_events[-1].output_tokens) == (11, 7)
    assert usage_events[-1].cost == result.usage.cost


async def test_parent_key_is_not_inherited(
    real_config: RealConfig, run_once: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-parent-" + SECRET)
    with MessagesStub([text_turn("PONG")]) as stub:
        result, _ = await run_once(real_config(stub, key="sk-explicit-1"))
    assert result.stop_reason == "completed"
    keys = {r.headers.get("x-api-key") for r in stub.model_requests}
    assert keys == {"sk-explicit-1"}


async def test_no_key_at_all_is_authentication(
    real_config: RealConfig, run_once: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-parent-" + SECRET)
    with MessagesStub([text_turn("PONG")]) as stub:
        result, disposed = await run_once(real_config(stub, key=None))
    assert result.stop_reason == "error"
    assert result.diagnostic == (
        "Subagent failure (provider: claude; stage: prompt; category: authentication)"
    )
    assert disposed is None
    assert not stub.header_seen("x-api-key")
    assert not stub.header_seen("authorization")


async def test_401_settles_authentication_at_the_first_frame(
    real_config: RealConfig, run_once: Any
) -> None:
    body = json.dumps(
        {"type": "error", "error": {"type": "authentication_error", "message": SECRET}}
    )
    events: list[Any] = []
    with MessagesStub([error_turn(401, body)]) as stub:
        started = time.monotonic()
        result, disposed = await run_once(real_config(stub), events=events)
        elapsed = time.monotonic() - started
    assert result.stop_reason == "error"
    assert result.diagnostic == (
        "Subagent failure (provider: claude; stage: prompt; category: authentication)"
    )
    assert disposed is None
    assert elapsed < 10  # the CLI's ten retries take minutes
    assert len(stub.model_requests) <= 3
    assert SECRET not in _safe_fields(result, events)


async def test_403_is_authentication(real_config: RealConfig, run_once: Any) -> None:
    body = json.dumps({"type": "error", "error": {"type": "permission_error", "message": SECRET}})
    events: list[Any] = []
    with MessagesStub([error_turn(403, body)]) as stub:
        result, _ = await run_once(real_config(stub), events=events)
    assert result.diagnostic == (
        "Subagent failure (provider: claude; stage: prompt; category: authentication)"
    )
    assert SECRET not in _safe_fields(result, events)


@pytest.mark.parametrize(
    ("tool", "tool_input", "kind"),
    [
        ("Write", {"file_path": "{ws}/proof.txt", "content": "proof\n"}, "edit"),
        ("Bash", {"command": "echo proof > {ws}/proof.txt", "description": "d"}, "execute"),
    ],
)
async def test_allow_runs_the_tool(
    real_config: RealConfig, run_once: Any, tool: str, tool_input: dict[str, str], kind: str
) -> None:
    events: list[Any] = []
    with MessagesStub() as stub:
        config = real_config(stub, permission="allow")
        ws = _workspace(config)
        filled = {k: v.format(ws=ws) for k, v in tool_input.items()}
        stub.set_turns([tool_turn(tool, filled), text_turn("done")])
        result, disposed = await run_once(config, events=events)
    assert (result.stop_reason, result.output, result.diagnostic, disposed) == (
        "completed",
        "done",
        None,
        None,
    )
    assert (ws / "proof.txt").read_text(encoding="utf-8") == "proof\n"
    permissions = [e for e in events if isinstance(e, PermissionEvent)]
    assert [(e.tool_kind, e.policy, e.decision) for e in permissions] == [
        (kind, "allow", "allow_once")
    ]
    calls = [(e.kind, e.status) for e in events if isinstance(e, ToolCallEvent)]
    assert calls == [(kind, "pending"), (kind, "completed")]


@pytest.mark.parametrize(
    ("tool", "tool_input", "kind"),
    [
        ("Write", {"file_path": "{ws}/proof.txt", "content": "proof\n"}, "edit"),
        ("Bash", {"command": "echo proof > {ws}/proof.txt", "description": "d"}, "execute"),
    ],
)
async def test_reject_leaves_nothing_and_says_so(
    real_config: RealConfig, run_once: Any, tool: str, tool_input: dict[str, str], kind: str
) -> None:
    with MessagesStub() as stub:
        config = real_config(stub)  # the default policy: reject
        ws = _workspace(config)
        filled = {k: v.format(ws=ws) for k, v in tool_input.items()}
        stub.set_turns([tool_turn(tool, filled), text_turn("could not")])
        result, disposed = await run_once(config)
    assert result.stop_reason == "completed"
    assert result.diagnostic == (
        f"Claude permission (policy: reject; tool kind: {kind}; decision: reject_once)"
    )
    assert disposed is None
    assert not (ws / "proof.txt").exists()


async def test_callback_sees_the_ask_and_its_answer_is_used(
    real_config: RealConfig, run_once: Any
) -> None:
    asks: list[PermissionAsk] = []

    async def callback(ask: PermissionAsk) -> str | None:
        asks.append(ask)
        return "allow_once"

    with MessagesStub() as stub:
        config = real_config(stub, permission=callback)
        ws = _workspace(config)
        stub.set_turns(
            [
                tool_turn("Write", {"file_path": f"{ws}/proof.txt", "content": "cb\n"}),
                text_turn("done"),
            ]
        )
        result, _ = await run_once(config)
    assert result.stop_reason == "completed"
    assert result.diagnostic is None
    assert [(a.tool_kind, a.option_kinds) for a in asks] == [
        ("edit", ("allow_once", "reject_once"))
    ]
    assert isinstance(asks[0].raw_input, dict)
    assert (ws / "proof.txt").read_text(encoding="utf-8") == "cb\n"


async def test_refusal(real_config: RealConfig, run_once: Any) -> None:
    with MessagesStub([text_turn("I can't", stop_reason="refusal")]) as stub:
        result, _ = await run_once(real_config(stub))
    assert (result.stop_reason, result.diagnostic) == ("refusal", None)
    assert "API Error" not in result.output


async def test_max_tokens(real_config: RealConfig, run_once: Any) -> None:
    with MessagesStub([text_turn("partial answ", stop_reason="max_tokens")]) as stub:
        result, _ = await run_once(real_config(stub))
    assert (result.stop_reason, result.diagnostic) == ("max-tokens", None)
    assert result.output.startswith("partial answ")
    assert "API Error" not in result.output


SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}


async def test_structured_output(real_config: RealConfig, run_once: Any) -> None:
    turns = [tool_turn("StructuredOutput", {"answer": "PONG"}), text_turn("done")]
    with MessagesStub(turns) as stub:
        request = SubagentRequest(prompt="go", output_schema=SCHEMA)
        result, _ = await run_once(real_config(stub), request)
    assert (result.stop_reason, result.diagnostic) == ("completed", None)
    assert json.loads(result.output) == {"answer": "PONG"}
    assert result.structured_output == {"answer": "PONG"}
    schema_arg = json.dumps(SCHEMA, separators=(",", ":"))
    assert any(
        schema_arg in json.dumps(r.body) or "StructuredOutput" in json.dumps(r.body)
        for r in stub.model_requests
    )


async def test_structured_output_missing_is_output_schema(
    real_config: RealConfig, run_once: Any
) -> None:
    with MessagesStub([text_turn("not json")]) as stub:
        request = SubagentRequest(prompt="go", output_schema=SCHEMA)
        result, _ = await run_once(real_config(stub), request)
    assert result.stop_reason == "error"
    assert result.diagnostic == (
        "Subagent failure (provider: claude; stage: prompt; category: output-schema)"
    )
    assert result.structured_output is None


async def test_stall_then_cancel_keeps_partial_output(real_config: RealConfig) -> None:
    with MessagesStub([stall_turn("partial words ")]) as stub:
        registry = SubagentRegistry()
        registry.register(ClaudeProvider(real_config(stub)))
        request = SubagentRequest(prompt="go")
        with anyio.fail_after(60):
            run = await registry.start("claude", request)
            async with run:
                async for event in run.events():
                    if isinstance(event, MessageChunk):
                        request.cancel.cancel()
                        break
                started = time.monotonic()
                result = await run.result()
                settle = time.monotonic() - started
                disposed = await run.dispose()
    assert (result.stop_reason, result.diagnostic, disposed) == ("aborted", None, None)
    assert result.output == "partial words "
    assert settle < 1.0
