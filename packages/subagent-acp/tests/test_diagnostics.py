"""Every ACP stage/category fact and composition rule, pinned exactly over real stdio."""

from __future__ import annotations

import logging

import anyio
import pytest
from subagent_acp import ACPProvider
from subagent_core import (
    CancelSignal,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
)
from subagent_core.kit import SpawnError

SECRET = "sk-SUPER-SECRET-9f8e7d"

REJECTED_EXECUTE = "ACP permission (policy: reject; tool kind: execute; decision: cancelled)"


async def start_error(config, request: SubagentRequest | None = None) -> SubagentStartError:
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    with anyio.fail_after(60), pytest.raises(SubagentStartError) as caught:
        await registry.start(config.provider_name, request or SubagentRequest(prompt="go"))
    return caught.value


def causes(error: BaseException) -> list[BaseException]:
    """The `__cause__` chain (the registry wraps the provider's error)."""
    chain: list[BaseException] = []
    cause = error.__cause__
    while cause is not None:
        chain.append(cause)
        cause = cause.__cause__
    return chain


def cause_texts(error: BaseException) -> list[str]:
    return [str(cause) for cause in causes(error)]


# -- the examples of diagnostics.md, verbatim ------------------------------------------------


async def test_crash_mid_prompt_with_exit_3(make_config, run_once) -> None:
    script = {"text": "partial", "crash": {"at": "after_prompt_output", "exit_code": 3}}
    result, disposed = await run_once(make_config(script))
    assert result == SubagentResult(
        stop_reason="error",
        output="partial",
        diagnostic="Subagent failure (provider: acp; stage: process; category: process-exit; exit code: 3)",
    )
    assert disposed is None


async def test_killed_by_a_signal(make_config, run_once) -> None:
    result, _ = await run_once(make_config({"crash": {"at": "prompt", "signal": "SIGKILL"}}))
    assert result.stop_reason == "error"
    assert result.diagnostic == (
        "Subagent failure (provider: acp; stage: process; category: process-exit; signal: SIGKILL)"
    )


async def test_max_turn_requests_is_a_remote_limit(make_config, run_once) -> None:
    result, _ = await run_once(make_config({"text": "so far", "stop_reason": "max_turn_requests"}))
    assert result == SubagentResult(
        stop_reason="error",
        output="so far",
        diagnostic=(
            "Subagent failure (provider: acp; stage: prompt; category: remote-limit; "
            "stop reason: max_turn_requests)"
        ),
    )


@pytest.mark.parametrize("kind", ["missing", "not-executable"])
async def test_command_not_found_is_a_start_error(make_config, tmp_path, kind: str) -> None:
    command = tmp_path / "acp-agent"
    if kind == "not-executable":
        command.write_text("#!/bin/sh\nexit 0\n", "utf-8")
        command.chmod(0o644)
    error = await start_error(make_config(command=str(command), args=[]))
    expected = "Subagent failure (provider: acp; stage: process; category: process-start)"
    assert (str(error), error.diagnostic) == (expected, expected)
    assert any(isinstance(cause, SpawnError) for cause in causes(error))


@pytest.mark.parametrize(
    ("code", "category"),
    [
        (-32000, "authentication"),
        (401, "authentication"),
        (403, "authentication"),
        (-32603, "transport"),
        (400, "transport"),
    ],
)
async def test_rpc_error_on_prompt(make_config, run_once, caplog, code: int, category: str) -> None:
    """-32000 (`auth_required`) and the codes 401/403 gemini-cli answers with name what to fix
    (only the number is read); any other JSON-RPC error is `transport`."""
    script = {
        "error": {
            "at": "prompt",
            "code": code,
            "message": f"Authentication required {SECRET}",
            "data": {"token": SECRET},
        }
    }
    with caplog.at_level(logging.INFO, logger="subagent_acp"):
        result, _ = await run_once(make_config(script))
    assert result.diagnostic == (
        f"Subagent failure (provider: acp; stage: prompt; category: {category})"
    )
    assert result.stop_reason == "error"
    assert SECRET not in repr(result)
    # The raw error stays in the host log of our own logger, and only there.
    holders = {
        record.name
        for record in caplog.records
        if SECRET in record.getMessage() or SECRET in str(record.exc_info)
    }
    assert holders == {"subagent_acp"}


@pytest.mark.parametrize(
    ("point", "stage"), [("initialize", "initialize"), ("new_session", "new-session")]
)
@pytest.mark.parametrize(("code", "category"), [(-32000, "authentication"), (-32603, "transport")])
async def test_rpc_error_before_the_prompt_is_a_start_error(
    make_config, point: str, stage: str, code: int, category: str
) -> None:
    script = {"error": {"at": point, "code": code, "message": SECRET, "data": SECRET}}
    error = await start_error(make_config(script))
    expected = f"Subagent failure (provider: acp; stage: {stage}; category: {category})"
    assert (str(error), error.diagnostic) == (expected, expected)
    # The raw error is kept only in the cause chain.
    assert any(SECRET in text for text in cause_texts(error))


async def test_auth_required_at_the_end_of_a_prompt_with_output(make_config, run_once) -> None:
    script = {"text": "partial", "error": {"at": "prompt_end", "code": -32000, "message": SECRET}}
    result, _ = await run_once(make_config(script))
    assert result == SubagentResult(
        stop_reason="error",
        output="partial",
        diagnostic="Subagent failure (provider: acp; stage: prompt; category: authentication)",
    )


async def test_crash_during_initialize_with_exit_3(make_config) -> None:
    error = await start_error(make_config({"crash": {"at": "initialize", "exit_code": 3}}))
    assert error.diagnostic == (
        "Subagent failure (provider: acp; stage: initialize; category: process-exit; exit code: 3)"
    )


async def test_refusal_after_a_rejected_permission(make_config, run_once) -> None:
    script = {"permission": {"tool_kind": "execute", "stop_reason_if_cancelled": "refusal"}}
    result, _ = await run_once(make_config(script))
    assert result == SubagentResult(
        stop_reason="refusal", output="[permission cancelled]", diagnostic=REJECTED_EXECUTE
    )


# -- every other stage / category fact ---------------------------------------------------------


async def test_schema_invalid_initialize_answer_is_transport(make_config) -> None:
    error = await start_error(make_config({"results": {"initialize": {"protocolVersion": SECRET}}}))
    expected = "Subagent failure (provider: acp; stage: initialize; category: transport)"
    assert (str(error), error.diagnostic) == (expected, expected)
    assert any(SECRET in text for text in cause_texts(error))


async def test_schema_invalid_new_session_answer_is_protocol(make_config) -> None:
    error = await start_error(make_config({"results": {"new_session": [SECRET]}}))
    assert (
        error.diagnostic
        == "Subagent failure (provider: acp; stage: new-session; category: protocol)"
    )


async def test_schema_invalid_prompt_answer_is_unknown(make_config, run_once) -> None:
    result, _ = await run_once(make_config({"text": "t", "results": {"prompt": [SECRET]}}))
    assert result == SubagentResult(
        stop_reason="error",
        output="t",
        diagnostic="Subagent failure (provider: acp; stage: prompt; category: unknown)",
    )


# -- a lost connection waits (up to 1.0 s) for the process outcome -----------------------------


async def diagnostic_of(config) -> str | None:
    """The start error's diagnostic, or the settled result's."""
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    failed: SubagentStartError | None = None
    with anyio.fail_after(60):
        try:
            run = await registry.start(config.provider_name, SubagentRequest(prompt="go"))
        except SubagentStartError as error:
            failed = error
        else:
            async with run:
                result = await run.result()
    if failed is not None:
        assert str(failed) == failed.diagnostic
        return failed.diagnostic
    assert result.stop_reason == "error"
    return result.diagnostic


@pytest.mark.parametrize(
    ("point", "stage"),
    [("initialize", "initialize"), ("new_session", "new-session"), ("prompt", "process")],
)
async def test_eof_then_exit_is_process_exit(make_config, point: str, stage: str) -> None:
    # stdout closes first; the exit follows later, still within the outcome wait.
    script = {"close_stdout": {"at": point, "exit_code": 7, "delay_seconds": 0.2}}
    assert await diagnostic_of(make_config(script)) == (
        f"Subagent failure (provider: acp; stage: {stage}; category: process-exit; exit code: 7)"
    )


@pytest.mark.parametrize("stage", ["initialize", "new-session", "prompt"])
async def test_eof_from_a_live_child_is_transport(make_config, stage: str) -> None:
    script = {"close_stdout": {"at": stage.replace("-", "_")}}
    assert await diagnostic_of(make_config(script)) == (
        f"Subagent failure (provider: acp; stage: {stage}; category: transport)"
    )


@pytest.mark.parametrize("session_id", ["", 42, None, {"id": "x"}])
async def test_unusable_session_id_is_protocol(make_config, session_id: object) -> None:
    error = await start_error(make_config({"session_id": session_id}))
    assert (
        error.diagnostic
        == "Subagent failure (provider: acp; stage: new-session; category: protocol)"
    )


async def test_crash_during_new_session(make_config) -> None:
    error = await start_error(make_config({"crash": {"at": "new_session", "exit_code": 4}}))
    assert error.diagnostic == (
        "Subagent failure (provider: acp; stage: new-session; category: process-exit; exit code: 4)"
    )


async def test_exit_code_zero_is_reported(make_config) -> None:
    error = await start_error(make_config({"crash": {"at": "initialize", "exit_code": 0}}))
    assert error.diagnostic == (
        "Subagent failure (provider: acp; stage: initialize; category: process-exit; exit code: 0)"
    )


async def test_unknown_stop_reason_is_not_copied(make_config, run_once) -> None:
    result, _ = await run_once(make_config({"text": "t", "stop_reason": f"weird {SECRET}"}))
    assert result == SubagentResult(
        stop_reason="error",
        output="t",
        diagnostic="Subagent failure (provider: acp; stage: prompt; category: unknown)",
    )


async def test_missing_workspace_is_configuration(make_config) -> None:
    error = await start_error(make_config(cwd=None), SubagentRequest(prompt="go"))
    assert error.diagnostic == (
        "Subagent failure (provider: acp; stage: initialize; category: configuration)"
    )


async def test_provider_name_is_the_provider_field(make_config, run_once) -> None:
    result, _ = await run_once(
        make_config({"stop_reason": "max_turn_requests"}, provider_name="remote-1")
    )
    assert result.diagnostic == (
        "Subagent failure (provider: remote-1; stage: prompt; category: remote-limit; "
        "stop reason: max_turn_requests)"
    )


# -- composition -------------------------------------------------------------------------------


async def test_error_appends_the_permission_line(make_config, run_once) -> None:
    script = {"permission": {"tool_kind": "edit"}, "stop_reason": "max_turn_requests"}
    result, _ = await run_once(make_config(script, permission="allow"))
    assert result.diagnostic == (
        "Subagent failure (provider: acp; stage: prompt; category: remote-limit; "
        "stop reason: max_turn_requests)\n"
        "ACP permission (policy: allow; tool kind: edit; decision: allow_once)"
    )


@pytest.mark.parametrize(
    ("acp_reason", "stop_reason"),
    [("max_tokens", "max-tokens"), ("refusal", "refusal"), ("cancelled", "aborted")],
)
async def test_permission_line_alone_for_terminal_stop_reasons(
    make_config, run_once, acp_reason: str, stop_reason: str
) -> None:
    script = {"permission": {"tool_kind": "fetch"}, "stop_reason": acp_reason}
    result, _ = await run_once(make_config(script))
    assert result.stop_reason == stop_reason
    assert (
        result.diagnostic
        == "ACP permission (policy: reject; tool kind: fetch; decision: cancelled)"
    )


@pytest.mark.parametrize("acp_reason", ["max_tokens", "refusal", "cancelled", "end_turn"])
async def test_no_permission_no_diagnostic(make_config, run_once, acp_reason: str) -> None:
    result, _ = await run_once(make_config({"stop_reason": acp_reason}))
    assert result.diagnostic is None


async def test_completed_after_a_refusal_carries_the_permission_line(make_config, run_once) -> None:
    """A refusal that shaped a completed run stays visible to the caller."""
    result, _ = await run_once(make_config({"permission": {"tool_kind": "execute"}}))
    assert result == SubagentResult(
        stop_reason="completed", output="[permission cancelled]", diagnostic=REJECTED_EXECUTE
    )


async def test_completed_with_only_granted_permissions_has_no_diagnostic(
    make_config, run_once
) -> None:
    config = make_config({"permission": {"tool_kind": "execute"}}, permission="allow")
    result, _ = await run_once(config)
    assert result == SubagentResult(stop_reason="completed", output="[permission selected allow]")


async def test_completed_shows_the_latest_refusal_even_when_a_grant_followed(
    make_config, run_once
) -> None:
    script = {
        "permission": [
            {
                "tool_kind": "edit",
                "options": [{"optionId": "r", "name": "R", "kind": "reject_once"}],
            },
            {"tool_kind": "read"},
        ]
    }
    result, _ = await run_once(make_config(script, permission="allow"))
    assert result == SubagentResult(
        stop_reason="completed",
        output="[permission cancelled][permission selected allow]",
        diagnostic="ACP permission (policy: allow; tool kind: edit; decision: cancelled)",
    )


async def test_local_cancel_after_a_permission_has_no_diagnostic(
    make_config, tmp_path, wait_for_path
) -> None:
    marker = tmp_path / "asked"
    script = {
        "permission": {"tool_kind": "execute"},
        "hang_at": "prompt",
        "markers": [{"at": "prompt_output", "path": str(marker)}],
    }
    registry = SubagentRegistry()
    registry.register(ACPProvider(make_config(script)))
    cancel = CancelSignal()
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go", cancel=cancel))
        async with run:
            await wait_for_path(marker)
            cancel.cancel()
            result = await run.result()
    assert result == SubagentResult(stop_reason="aborted", output="[permission cancelled]")


async def test_missing_tool_kind_is_other(make_config, run_once) -> None:
    script = {"permission": {}, "stop_reason": "refusal"}
    result, _ = await run_once(make_config(script))
    assert (
        result.diagnostic
        == "ACP permission (policy: reject; tool kind: other; decision: cancelled)"
    )


async def test_the_latest_permission_request_wins(make_config, run_once) -> None:
    script = {
        "permission": [
            {
                "tool_kind": "delete",
                "options": [{"optionId": "always", "name": SECRET, "kind": "allow_always"}],
            },
            # allow_always above is not remembered: this request is decided on its own.
            {"tool_kind": "read"},
        ],
        "stop_reason": "max_tokens",
    }
    result, _ = await run_once(make_config(script, permission="allow"))
    assert result == SubagentResult(
        stop_reason="max-tokens",
        output="[permission selected always][permission selected allow]",
        diagnostic="ACP permission (policy: allow; tool kind: read; decision: allow_once)",
    )


async def test_allow_always_is_reported_as_selected(make_config, run_once) -> None:
    script = {
        "permission": {
            "tool_kind": "delete",
            "options": [{"optionId": "always", "name": SECRET, "kind": "allow_always"}],
        },
        "stop_reason": "max_tokens",
    }
    result, _ = await run_once(make_config(script, permission="allow"))
    assert (
        result.diagnostic
        == "ACP permission (policy: allow; tool kind: delete; decision: allow_always)"
    )
