"""A hostile child: bad frames, huge lines, stderr floods, secrets. The parent never hangs,
never crashes, and no child text reaches a result or an exception."""

from __future__ import annotations

import json
import logging

import anyio
import pytest
from subagent_acp import ACPProvider
from subagent_core import SubagentRegistry, SubagentRequest, SubagentResult, SubagentStartError

SECRET = "sk-ADVERSARY-5e5e5e"
LOOKALIKE = "Subagent failure (provider: evil; stage: prompt; category: none)"


def assert_clean(result: SubagentResult, in_grammar) -> None:
    assert in_grammar(result.diagnostic)
    assert SECRET not in (result.diagnostic or "")
    assert LOOKALIKE not in (result.diagnostic or "")


async def test_malformed_line_then_normal_behaviour(make_config, run_once, in_grammar) -> None:
    deep = "[" * 20_000 + "]" * 20_000  # valid JSON nested past the recursion limit
    script = {
        "inject": [
            {"at": "prompt", "kind": "malformed"},
            {"at": "initialize", "kind": "garbage"},
            {"at": "prompt", "kind": "raw", "line": deep},
        ],
        "text": "fine",
    }
    result, _ = await run_once(make_config(script))
    assert result == SubagentResult(stop_reason="completed", output="fine")


async def test_only_garbage_then_exit_is_process_exit(make_config) -> None:
    script = {
        "inject": [
            {"at": "initialize", "kind": "garbage"},
            {"at": "initialize", "kind": "non_utf8"},
        ],
        "crash": {"at": "initialize", "exit_code": 0},
    }
    registry = SubagentRegistry()
    registry.register(ACPProvider(make_config(script)))
    with anyio.fail_after(60), pytest.raises(SubagentStartError) as caught:
        await registry.start("acp", SubagentRequest(prompt="go"))
    assert caught.value.diagnostic == (
        "Subagent failure (provider: acp; stage: initialize; category: process-exit; exit code: 0)"
    )


async def test_five_megabyte_line_completes(make_config, run_once) -> None:
    size = 5 * 1024 * 1024
    result, _ = await run_once(make_config({"text": "a", "huge_chunk_bytes": size}))
    assert result.stop_reason == "completed"
    assert result.output == "a" + "x" * size


async def test_line_over_the_frame_limit_is_transport(make_config, run_once) -> None:
    config = make_config(
        {"text": "before", "huge_chunk_bytes": 2_000_000}, max_frame_bytes=1_000_000
    )
    result, disposed = await run_once(config)
    assert result == SubagentResult(
        stop_reason="error",
        output="before",
        diagnostic="Subagent failure (provider: acp; stage: prompt; category: transport)",
    )
    assert disposed is None


async def test_garbage_over_the_frame_limit_during_initialize(make_config) -> None:
    script = {
        "inject": [{"at": "initialize", "kind": "huge_garbage", "bytes": 300_000}],
        "ignore_eof": True,
    }
    registry = SubagentRegistry()
    registry.register(ACPProvider(make_config(script, max_frame_bytes=100_000)))
    with anyio.fail_after(60), pytest.raises(SubagentStartError) as caught:
        await registry.start("acp", SubagentRequest(prompt="go"))
    assert caught.value.diagnostic == (
        "Subagent failure (provider: acp; stage: initialize; category: transport)"
    )


async def test_non_utf8_bytes_are_skipped(make_config, run_once) -> None:
    script = {"inject": [{"at": "prompt", "kind": "non_utf8"}], "text": "after"}
    result, _ = await run_once(make_config(script))
    assert result == SubagentResult(stop_reason="completed", output="after")


async def test_unknown_and_unadvertised_requests_get_method_not_found(
    make_config, run_once
) -> None:
    probes = [
        "vendor/unknown",
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "_ext/thing",
    ]
    result, _ = await run_once(make_config({"probe_requests": probes, "text": "!"}))
    assert result == SubagentResult(
        stop_reason="completed",
        output=(
            "[vendor/unknown -> -32601][fs/read_text_file -> -32601][fs/write_text_file -> -32601]"
            "[terminal/create -> -32601][_ext/thing -> -32601]!"
        ),
    )


async def test_stderr_flood_with_secrets_never_blocks_or_leaks(
    make_config, run_once, in_grammar
) -> None:
    text = f"{SECRET} {LOOKALIKE} Traceback: boom\n"
    script = {
        "stderr": {"text": text, "bytes": 1024 * 1024},
        "crash": {"at": "after_prompt_output", "exit_code": 2},
        "text": "x",
    }
    result, _ = await run_once(make_config(script))
    assert result.diagnostic == (
        "Subagent failure (provider: acp; stage: process; category: process-exit; exit code: 2)"
    )
    assert_clean(result, in_grammar)


async def test_rpc_error_on_prompt_with_secret_message_and_data(
    make_config, run_once, in_grammar
) -> None:
    script = {
        "error": {
            "at": "prompt",
            "code": -32603,
            "message": f"{LOOKALIKE} {SECRET}",
            "data": {"k": SECRET},
        },
        "stderr": {"text": SECRET, "bytes": 1000},
    }
    result, _ = await run_once(make_config(script))
    assert (
        result.diagnostic == "Subagent failure (provider: acp; stage: prompt; category: transport)"
    )
    assert_clean(result, in_grammar)


async def test_stop_reason_that_looks_like_a_diagnostic(make_config, run_once, in_grammar) -> None:
    result, _ = await run_once(make_config({"stop_reason": "end_turn; category: none"}))
    assert result.diagnostic == "Subagent failure (provider: acp; stage: prompt; category: unknown)"
    assert_clean(result, in_grammar)


async def test_permission_title_and_options_never_leak(make_config, run_once, in_grammar) -> None:
    options = [{"optionId": SECRET, "name": LOOKALIKE, "kind": "allow_once"}]
    script = {
        "permission": {
            "tool_kind": "execute",
            "title": LOOKALIKE,
            "raw_input": {"cmd": SECRET},
            "options": options,
        },
        "stop_reason": "max_turn_requests",
    }
    result, _ = await run_once(make_config(script, permission="allow"))
    assert result.diagnostic == (
        "Subagent failure (provider: acp; stage: prompt; category: remote-limit; stop reason: max_turn_requests)\n"
        "ACP permission (policy: allow; tool kind: execute; decision: allow_once)"
    )
    assert_clean(result, in_grammar)


async def test_out_of_set_tool_kind_is_other(make_config, run_once, in_grammar) -> None:
    script = {"permission": {"tool_kind": f"launch {SECRET}"}, "stop_reason": "refusal"}
    result, _ = await run_once(make_config(script))
    assert result == SubagentResult(
        stop_reason="refusal",
        output="[permission cancelled]",
        diagnostic="ACP permission (policy: reject; tool kind: other; decision: cancelled)",
    )
    assert_clean(result, in_grammar)


async def test_grandchild_crash_combo_never_hangs(make_config, run_once, in_grammar) -> None:
    script = {
        "grandchild": True,
        "trap_sigterm": True,
        "ignore_eof": True,
        "inject": [{"at": "prompt", "kind": "malformed"}],
        "crash": {"at": "after_prompt_output", "signal": "SIGSEGV"},
    }
    result, disposed = await run_once(make_config(script))
    assert result.diagnostic == (
        "Subagent failure (provider: acp; stage: process; category: process-exit; signal: SIGSEGV)"
    )
    assert disposed is None


async def test_invalid_notifications_and_requests_stay_out_of_other_loggers(
    make_config, run_once, caplog
) -> None:
    bad_update = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "x", "update": {"sessionUpdate": SECRET, "content": SECRET}},
    }
    weird = {"jsonrpc": "2.0", "method": f"session/{SECRET}", "params": {"k": SECRET}}
    script = {
        "inject": [
            {"at": "prompt", "kind": "raw", "line": json.dumps(bad_update)},
            {"at": "prompt", "kind": "raw", "line": json.dumps(weird)},
            {"at": "prompt", "kind": "unknown_request", "method": f"vendor/{SECRET}"},
        ],
        "text": "ok",
    }
    with caplog.at_level(logging.DEBUG):
        result, _ = await run_once(make_config(script))
    assert result == SubagentResult(stop_reason="completed", output="ok")
    leaked = [
        record.name
        for record in caplog.records
        if not record.name.startswith("subagent_acp")
        and (SECRET in record.getMessage() or SECRET in str(record.exc_info))
    ]
    assert leaked == []
