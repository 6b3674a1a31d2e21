"""The provider against the stdlib fake app-server: mapping rows, stages and hostile children."""

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


def _line(stage: str, category: str, extra: str = "") -> str:
    return f"Subagent failure (provider: codex; stage: {stage}; category: {category}{extra})"


def _done(text: str = "done") -> list[dict[str, object]]:
    return [{"message": text, "phase": "final_answer"}, {"complete": "completed"}]


async def test_a_turn_maps_to_events_output_and_usage(fake_config, run_once) -> None:
    scenario = {
        "turn": [
            {"reasoning": "thinking"},
            {"delta": "hel"},
            {"delta": "lo"},
            {"message": "draft", "phase": "commentary"},
            {"command": "ls"},
            {"usage": [20, 5, 9]},
            *_done("hello"),
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


@pytest.mark.parametrize(
    ("info", "stop_reason", "diagnostic"),
    [
        ("contextWindowExceeded", "max-tokens", None),
        (
            "usageLimitExceeded",
            "error",
            _line("prompt", "remote-limit", "; stop reason: usage-limit-exceeded"),
        ),
        (
            "rateLimitExceeded",
            "error",
            _line("prompt", "remote-limit", "; stop reason: rate-limit-exceeded"),
        ),
        (
            "sessionBudgetExceeded",
            "error",
            _line("prompt", "remote-limit", "; stop reason: session-budget-exceeded"),
        ),
        (
            "tooManyDenials",
            "error",
            _line("prompt", "remote-limit", "; stop reason: too-many-denials"),
        ),
        ("cyberPolicy", "refusal", None),
        ("misalignmentPolicyViolation", "refusal", None),
        ("serverOverloaded", "error", _line("prompt", "upstream")),
        ("internalServerError", "error", _line("prompt", "upstream")),
        ({"httpConnectionFailed": {"httpStatusCode": 502}}, "error", _line("prompt", "upstream")),
        (
            {"responseStreamDisconnected": {"httpStatusCode": None}},
            "error",
            _line("prompt", "upstream"),
        ),
        (
            {"responseTooManyFailedAttempts": {"httpStatusCode": 500}},
            "error",
            _line("prompt", "upstream"),
        ),
        ("unauthorized", "error", _line("prompt", "authentication")),
        (
            {"httpConnectionFailed": {"httpStatusCode": 403}},
            "error",
            _line("prompt", "authentication"),
        ),
        ("badRequest", "error", _line("prompt", "unknown")),
        ("sk-SECRET-novel-variant", "error", _line("prompt", "unknown")),
        ({"sk-SECRET": {"httpStatusCode": 500}}, "error", _line("prompt", "unknown")),
        (None, "error", _line("prompt", "unknown")),
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
    assert (result.stop_reason, result.diagnostic) == ("error", _line("prompt", "authentication"))
    assert disposed is None
    assert "sk-SECRET" not in repr(events)


async def test_a_remote_interrupt_is_a_remote_abort(fake_config, run_once) -> None:
    result, _, _ = await run_once(fake_config({"turn": [{"complete": "interrupted"}]}))
    assert (result.stop_reason, result.diagnostic) == (
        "aborted",
        _line("prompt", "unknown", "; stop reason: interrupted"),
    )


async def test_an_unknown_turn_status_is_unknown(fake_config, run_once) -> None:
    result, _, _ = await run_once(fake_config({"turn": [{"complete": "sk-SECRET-status"}]}))
    assert (result.stop_reason, result.diagnostic) == ("error", _line("prompt", "unknown"))


# -- start stages ---------------------------------------------------------------------------


async def _start_error(config) -> SubagentStartError:
    with anyio.fail_after(30), pytest.raises(SubagentStartError) as caught:
        await CodexProvider(config).start(SubagentRequest(prompt="go"))
    return caught.value


async def test_initialize_error_is_protocol(fake_config) -> None:
    error = await _start_error(fake_config({"initialize_error": -32603}))
    assert error.diagnostic == _line("initialize", "protocol")


async def test_initialize_error_401_is_authentication(fake_config) -> None:
    error = await _start_error(fake_config({"initialize_error": 401}))
    assert error.diagnostic == _line("initialize", "authentication")


@pytest.mark.parametrize("at", ["initialize", "thread"])
async def test_exit_during_the_handshake_is_process_exit(fake_config, at: str) -> None:
    error = await _start_error(fake_config({"exit_at": at, "exit_code": 3}))
    assert error.diagnostic == _line("initialize", "process-exit", "; exit code: 3")


async def test_a_provider_needing_a_login_fails_the_start(fake_config) -> None:
    account = {"account": None, "requiresOpenaiAuth": True}
    error = await _start_error(fake_config({"account": account}))
    assert error.diagnostic == _line("initialize", "authentication")


async def test_the_startup_deadline_rolls_back(fake_config) -> None:
    config = fake_config({"hang_at": "thread/start"}, startup_timeout_seconds=0.5)
    error = await _start_error(config)
    assert error.diagnostic == _line("initialize", "timeout")


async def test_mcp_servers_are_refused_before_spawn(fake_config) -> None:
    from subagent_core import MCPStdioServerSpec

    request = SubagentRequest(
        prompt="go", mcp_servers=(MCPStdioServerSpec(name="x", command="/bin/true"),)
    )
    with pytest.raises(SubagentStartError) as caught:
        await CodexProvider(fake_config({})).start(request)
    assert caught.value.diagnostic == _line("initialize", "configuration")


# -- hostile children -----------------------------------------------------------------------


async def test_a_flood_of_unknown_notifications_is_read_through(fake_config, run_once) -> None:
    result, _, _ = await run_once(fake_config({"turn": [{"flood": 20000}, *_done()]}))
    assert (result.stop_reason, result.output) == ("completed", "done")


async def test_garbage_is_protocol(fake_config, run_once) -> None:
    scenario = {"turn": [{"delta": "part"}, {"garbage": "sk-SECRET not json"}, {"hang": True}]}
    result, disposed, _ = await run_once(fake_config(scenario))
    assert (result.stop_reason, result.output) == ("error", "part")
    assert result.diagnostic == _line("prompt", "protocol")
    assert disposed is None


async def test_an_over_long_line_is_transport(fake_config, run_once) -> None:
    scenario = {"turn": [{"huge": 100_000}, {"hang": True}]}
    result, _, _ = await run_once(fake_config(scenario, max_frame_bytes=4096))
    assert result.diagnostic == _line("prompt", "transport")


async def test_duplicate_and_late_responses_are_dropped(fake_config, run_once) -> None:
    scenario = {"turn": [{"duplicate": True}, {"late": 777}, {"late": "x"}, *_done()]}
    result, _, _ = await run_once(fake_config(scenario))
    assert (result.stop_reason, result.output) == ("completed", "done")


async def test_death_mid_frame_is_process_exit(fake_config, run_once) -> None:
    result, disposed, _ = await run_once(fake_config({"turn": [{"delta": "part"}, {"die": 3}]}))
    assert (result.stop_reason, result.output) == ("error", "part")
    assert result.diagnostic == _line("process", "process-exit", "; exit code: 3")
    assert disposed is None


async def test_exit_zero_before_the_turn_ends_is_process_exit(fake_config, run_once) -> None:
    result, _, _ = await run_once(fake_config({"turn": [{"exit": 0}]}))
    assert result.diagnostic == _line("process", "process-exit", "; exit code: 0")


async def test_an_approval_storm_is_answered_in_bounds(fake_config, run_once) -> None:
    """200 requests at once: 64 queue for the gate, the rest are refused with an error."""
    scenario = {"turn": [{"approval": "command", "count": 200}, *_done()]}
    result, _, events = await run_once(fake_config(scenario, permission={"*": "reject"}))
    assert result.stop_reason == "completed"
    assert result.diagnostic == (
        "Codex permission (policy: reject; tool kind: execute; decision: reject_once)"
    )
    decided = [e for e in events if isinstance(e, PermissionEvent)]
    assert 1 <= len(decided) <= 200


@pytest.mark.parametrize(
    ("kind", "tool_kind"),
    [("command", "execute"), ("fileChange", "edit"), ("permissions", "other")],
)
async def test_each_approval_kind_goes_through_the_gate(
    fake_config, run_once, kind: str, tool_kind: str
) -> None:
    scenario = {"turn": [{"approval": kind}, *_done()]}
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
    fake_config, run_once, tmp_path: Path, permission, decision: str
) -> None:
    answers = tmp_path / "answers.jsonl"
    scenario = {
        "answers_to": str(answers),
        "turn": [{"approval": "command"}, {"approval": "fileChange"}, *_done()],
    }
    result, _, _ = await run_once(fake_config(scenario, permission=permission))
    assert result.stop_reason == "completed"
    sent = [json.loads(line) for line in answers.read_text(encoding="utf-8").splitlines()]
    assert [a["result"] for a in sent] == [{"decision": decision}, {"decision": decision}]


async def test_an_unknown_server_request_is_refused_and_the_run_goes_on(
    fake_config, run_once, tmp_path: Path
) -> None:
    answers = tmp_path / "answers.jsonl"
    scenario = {
        "answers_to": str(answers),
        "turn": [{"request": "item/tool/call"}, {"request": "sk-SECRET/x"}, *_done()],
    }
    result, _, _ = await run_once(fake_config(scenario))
    assert (result.stop_reason, result.output, result.diagnostic) == ("completed", "done", None)
    sent = [json.loads(line) for line in answers.read_text(encoding="utf-8").splitlines()]
    assert [a["error"]["code"] for a in sent] == [-32601, -32601]


async def test_an_inherited_openai_key_never_reaches_the_child(
    fake_config, run_once, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-inherited")
    dump = tmp_path / "env.json"
    result, _, _ = await run_once(fake_config({"turn": [{"env_to": str(dump)}, *_done()]}))
    assert result.stop_reason == "completed"
    assert "OPENAI_API_KEY" not in json.loads(dump.read_text(encoding="utf-8"))
    config = fake_config(
        {"turn": [{"env_to": str(dump)}, *_done()]}, env={"OPENAI_API_KEY": "sk-given"}
    )
    await run_once(config)
    assert json.loads(dump.read_text(encoding="utf-8"))["OPENAI_API_KEY"] == "sk-given"


async def test_a_host_callback_slower_than_the_idle_bound_does_not_time_out(
    fake_config, run_once
) -> None:
    # The app-server waits on the parent's approval for four bounds (a human deciding): that
    # silence is the parent's, so the turn completes.
    async def slow_human(ask: object) -> str | None:
        await anyio.sleep(2.0)
        return "allow_once"

    scenario = {"turn": [{"approval": "command"}, *_done("after")]}
    config = fake_config(scenario, idle_timeout_seconds=0.5, permission=slow_human)
    result, disposed, _ = await run_once(config)
    assert (result.stop_reason, result.output, result.diagnostic) == ("completed", "after", None)
    assert disposed is None


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


async def test_stderr_is_drained_into_its_log_and_never_passed_through(
    fake_config, run_once, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from subagent_codex.testing import fake_app_server_argv
    from subagent_core.kit import ChildStderr

    secret = "sk-codex-stderr-secret-9"
    # `sh` writes the line as the app-server would, then becomes the fake (same pid and pipe).
    wrapper = f'echo "token={secret}" >&2; exec "$@"'
    logs = tmp_path / "logs"
    config = fake_config(
        {"turn": _done("hello")},
        command="/bin/sh",
        args=["-c", wrapper, "sh", *fake_app_server_argv()],
        child_stderr=ChildStderr(log_dir=logs),
    )
    result, disposed, _ = await run_once(config)
    assert (result.stop_reason, result.output, disposed) == ("completed", "hello", None)
    assert secret not in capfd.readouterr().err
    assert [log.read_text("utf-8") for log in logs.iterdir()] == [f"token={secret}\n"]
