"""The provider's own life on the stdlib fake app-server: a turn's events, output and usage,
every start stage, approvals through the gate, a start cancelled midway. The ways a turn ends
are test_facts.py's, hostile children test_hostile.py's, and the contract every provider
shares runs in test_conformance.py."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from subagent_codex import CodexProvider
from subagent_core import (
    MessageChunk,
    PermissionEvent,
    SubagentRequest,
    SubagentStartError,
    ThoughtChunk,
    ToolCallEvent,
    Usage,
    UsageEvent,
)


async def test_a_turn_maps_to_events_output_and_usage(
    fake_config, run_once, completed_turn
) -> None:
    scenario = {
        "turn": [
            {"reasoning": "thinking"},
            {"delta": "hel"},
            {"delta": "lo"},
            {"message": "draft", "phase": "commentary"},
            {"command": "ls"},
            {"usage": [20, 5, 9]},
            *completed_turn("hello"),
        ]
    }
    result, disposed, events = await run_once(fake_config(scenario))
    assert (result.stop_reason, result.output, result.diagnostic) == ("completed", "hello", None)
    assert result.usage == Usage(input_tokens=20, output_tokens=9, cached_input_tokens=5)
    assert disposed is None
    assert [e.text for e in events if isinstance(e, MessageChunk)] == ["hel", "lo"]
    assert [e.text for e in events if isinstance(e, ThoughtChunk)] == ["thinking"]
    tools = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(t.kind, t.status, t.exit_code) for t in tools] == [
        ("execute", "in_progress", None),
        ("execute", "completed", 0),
    ]
    assert [e for e in events if isinstance(e, UsageEvent)] == [
        UsageEvent(input_tokens=20, output_tokens=9, cached_input_tokens=5)
    ]


async def test_output_falls_back_to_the_last_message_then_the_deltas(fake_config, run_once) -> None:
    result, _, _ = await run_once(
        fake_config({"turn": [{"message": "a"}, {"message": "b"}, {"complete": "completed"}]})
    )
    assert result.output == "b"
    result, _, _ = await run_once(
        fake_config({"turn": [{"delta": "x"}, {"delta": "y"}, {"complete": "completed"}]})
    )
    assert result.output == "xy"


# -- start stages ---------------------------------------------------------------------------


async def _start_error(config) -> SubagentStartError:
    with anyio.fail_after(30), pytest.raises(SubagentStartError) as caught:
        await CodexProvider(config).start(SubagentRequest(prompt="go"))
    return caught.value


async def test_initialize_error_is_protocol(fake_config, failure_line) -> None:
    error = await _start_error(fake_config({"initialize_error": -32603}))
    assert error.diagnostic == failure_line("initialize", "protocol")


async def test_initialize_error_401_is_authentication(fake_config, failure_line) -> None:
    error = await _start_error(fake_config({"initialize_error": 401}))
    assert error.diagnostic == failure_line("initialize", "authentication")


@pytest.mark.parametrize("at", ["initialize", "thread"])
async def test_exit_during_the_handshake_is_process_exit(
    fake_config, failure_line, at: str
) -> None:
    error = await _start_error(fake_config({"exit_at": at, "exit_code": 3}))
    assert error.diagnostic == failure_line("initialize", "process-exit", "; exit code: 3")


async def test_a_provider_needing_a_login_fails_the_start(fake_config, failure_line) -> None:
    account = {"account": None, "requiresOpenaiAuth": True}
    error = await _start_error(fake_config({"account": account}))
    assert error.diagnostic == failure_line("initialize", "authentication")


async def test_the_startup_deadline_rolls_back(fake_config, failure_line) -> None:
    config = fake_config({"hang_at": "thread/start"}, startup_timeout_seconds=0.5)
    error = await _start_error(config)
    assert error.diagnostic == failure_line("initialize", "timeout")


async def test_mcp_servers_are_refused_before_spawn(fake_config, failure_line) -> None:
    from subagent_core import MCPStdioServerSpec

    request = SubagentRequest(
        prompt="go", mcp_servers=(MCPStdioServerSpec(name="x", command="/bin/true"),)
    )
    with pytest.raises(SubagentStartError) as caught:
        await CodexProvider(fake_config({})).start(request)
    assert caught.value.diagnostic == failure_line("initialize", "configuration")


# -- cancelled mid-start ---------------------------------------------------------------------


async def test_a_caller_cancelled_mid_start_rolls_the_child_back(fake_config) -> None:
    """The awaiting task is cancelled while `thread/start` hangs: the tree is gone first."""
    provider = CodexProvider(fake_config({"hang_at": "thread/start", "ignore_eof": True}))
    with anyio.fail_after(30):
        with anyio.move_on_after(1.0) as scope:
            await provider.start(SubagentRequest(prompt="go"))
        assert scope.cancelled_caught  # the leak guard then checks that nothing is left


async def test_a_signal_cancelled_mid_start_is_the_fixed_text(fake_config) -> None:
    from subagent_core import CancelSignal

    cancel = CancelSignal()
    provider = CodexProvider(fake_config({"hang_at": "thread/start"}))
    error: SubagentStartError | None = None
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_cancel_later, cancel)
            try:
                await provider.start(SubagentRequest(prompt="go", cancel=cancel))
            except SubagentStartError as caught:
                error = caught
    assert error is not None
    assert str(error) == "subagent request was aborted before the Codex child started"
    assert error.diagnostic is None


async def _cancel_later(cancel) -> None:
    await anyio.sleep(0.5)  # bounds a hang on purpose; the outcome does not depend on it
    cancel.cancel()


# -- approvals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "tool_kind"),
    [("command", "execute"), ("fileChange", "edit"), ("permissions", "other")],
)
async def test_each_approval_kind_goes_through_the_gate(
    fake_config, run_once, completed_turn, kind: str, tool_kind: str
) -> None:
    scenario = {"turn": [{"approval": kind}, *completed_turn()]}
    result, _, events = await run_once(fake_config(scenario, permission="allow"))
    assert (result.stop_reason, result.diagnostic) == ("completed", None)
    assert [e for e in events if isinstance(e, PermissionEvent)] == [
        PermissionEvent(tool_kind=tool_kind, policy="allow", decision="allow_once")
    ]


@pytest.mark.parametrize(
    ("permission", "decision"),
    [("allow", "accept"), ("reject", "decline"), ({"*": "reject"}, "decline")],
)
async def test_approvals_are_answered_once_never_for_the_session(
    fake_config, run_once, completed_turn, tmp_path: Path, permission, decision: str
) -> None:
    answers = tmp_path / "answers.jsonl"
    scenario = {
        "answers_to": str(answers),
        "turn": [{"approval": "command"}, {"approval": "fileChange"}, *completed_turn()],
    }
    result, _, _ = await run_once(fake_config(scenario, permission=permission))
    assert result.stop_reason == "completed"
    sent = [json.loads(line) for line in answers.read_text(encoding="utf-8").splitlines()]
    assert [a["result"] for a in sent] == [{"decision": decision}, {"decision": decision}]


async def test_a_host_callback_slower_than_the_idle_bound_does_not_time_out(
    fake_config, run_once, completed_turn
) -> None:
    # The app-server waits on the parent's approval for four bounds (a human deciding): that
    # silence is the parent's, so the turn completes.
    async def slow_human(ask: object) -> str | None:
        await anyio.sleep(2.0)
        return "allow_once"

    scenario = {"turn": [{"approval": "command"}, *completed_turn("after")]}
    config = fake_config(scenario, idle_timeout_seconds=0.5, permission=slow_human)
    result, disposed, _ = await run_once(config)
    assert (result.stop_reason, result.output, result.diagnostic) == ("completed", "after", None)
    assert disposed is None
