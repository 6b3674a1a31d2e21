"""The real `codex` binary (the `[cli]` extra) against the loopback Responses stub, keyless."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from subagent_core import (
    CancelSignal,
    PermissionEvent,
    SubagentRequest,
    SubagentStartError,
    Usage,
)

STUB_SECRET = "sk-stub-SECRET-7f3a9c"


def _names(path: Path) -> list[str]:
    return sorted(entry.name for entry in path.iterdir())


def _rollouts(home: Path) -> list[Path]:
    """Every rollout file codex could have written (`sessions/…/*.jsonl`, archived too)."""
    return [p for p in home.rglob("*.jsonl") if {"sessions", "archived_sessions"} & set(p.parts)]


async def test_text_completes_with_exact_usage(stub_factory, stub_config, run_once) -> None:
    stub = stub_factory([{"text": "PONG", "usage": {"input": 11, "cached": 3, "output": 7}}])
    result, disposed, _ = await run_once(stub_config(stub))
    assert result.stop_reason == "completed"
    assert result.output == "PONG"
    assert result.diagnostic is None
    assert result.usage == Usage(input_tokens=11, output_tokens=7, cached_input_tokens=3)
    assert disposed is None
    assert len(stub.requests) == 1
    assert stub.authorizations == [f"Bearer {STUB_SECRET}"]


def _escalating_write(name: str = "proof.txt") -> list[dict[str, object]]:
    return [
        {"exec": f"echo hi > {name}", "escalate": True, "justification": STUB_SECRET},
        {"text": "done"},
    ]


async def test_allow_lets_an_escalated_command_write(
    stub_factory, stub_config, run_once, workspace: Path
) -> None:
    """A command asking to leave a read-only sandbox is approved once and writes its file."""
    stub = stub_factory(_escalating_write())
    config = stub_config(stub, permission="allow", sandbox="read-only")
    result, disposed, events = await run_once(config)
    assert (result.stop_reason, result.output, result.diagnostic) == ("completed", "done", None)
    assert (workspace / "proof.txt").read_text(encoding="utf-8") == "hi\n"
    permissions = [e for e in events if isinstance(e, PermissionEvent)]
    assert permissions == [
        PermissionEvent(tool_kind="execute", policy="allow", decision="allow_once")
    ]
    assert disposed is None


async def test_reject_writes_nothing(stub_factory, stub_config, run_once, workspace: Path) -> None:
    """`reject` never asks (approval policy `never`): the read-only sandbox alone refuses."""
    stub = stub_factory(_escalating_write())
    result, _, events = await run_once(stub_config(stub, sandbox="read-only"))
    assert (result.stop_reason, result.diagnostic) == ("completed", None)
    assert _names(workspace) == []
    assert not [e for e in events if isinstance(e, PermissionEvent)]


async def test_a_declined_approval_leaves_exactly_the_permission_line(
    stub_factory, stub_config, run_once, workspace: Path
) -> None:
    stub = stub_factory(_escalating_write())
    config = stub_config(stub, permission={"read": "allow", "*": "reject"}, sandbox="read-only")
    result, _, events = await run_once(config)
    assert result.stop_reason == "completed"
    assert result.diagnostic == (
        "Codex permission (policy: reject; tool kind: execute; decision: reject_once)"
    )
    assert _names(workspace) == []
    assert [e for e in events if isinstance(e, PermissionEvent)] == [
        PermissionEvent(tool_kind="execute", policy="reject", decision="reject_once")
    ]


async def test_a_callback_decides(stub_factory, stub_config, run_once, workspace: Path) -> None:
    asks = []

    async def decide(ask) -> str | None:
        asks.append(ask)
        return "allow_once"

    stub = stub_factory(_escalating_write())
    result, _, _ = await run_once(stub_config(stub, permission=decide, sandbox="read-only"))
    assert (result.stop_reason, result.diagnostic) == ("completed", None)
    assert (workspace / "proof.txt").exists()
    assert [(a.tool_kind, a.option_kinds) for a in asks] == [
        ("execute", ("allow_once", "reject_once"))
    ]


def _assert_no_secret(result, events) -> None:
    assert STUB_SECRET not in result.output
    assert STUB_SECRET not in (result.diagnostic or "")
    for event in events:
        assert STUB_SECRET not in repr(event)


@pytest.mark.parametrize("status", [401, 403])
async def test_a_rejected_key_is_authentication_within_seconds(
    stub_factory, stub_config, run_once, status: int
) -> None:
    """Settled at the first `error` frame (codex would retry five times, ~6.3 s)."""
    from subagent_codex import CodexProvider

    stub = stub_factory([{"status": status, "body": f"invalid key {STUB_SECRET}"}])
    events: list[object] = []
    with anyio.fail_after(60):
        run = await CodexProvider(stub_config(stub)).start(SubagentRequest(prompt="go"))
        published = time.monotonic()
        async with run:
            async for event in run.events():
                events.append(event)
            result = await run.result()
            settled = time.monotonic() - published
            disposed = await run.dispose()
    assert settled < 3.0  # the turn's first request fails at once; the retries take > 6 s
    assert len(stub.requests) < 5
    assert result.stop_reason == "error"
    assert result.diagnostic == (
        "Subagent failure (provider: codex; stage: prompt; category: authentication)"
    )
    assert result.output == ""
    _assert_no_secret(result, events)
    assert disposed is None


async def test_a_server_error_is_upstream(stub_factory, stub_config, run_once) -> None:
    stub = stub_factory([{"status": 500, "body": f"boom {STUB_SECRET}"}])
    result, _, events = await run_once(stub_config(stub, retries=0))
    assert result.stop_reason == "error"
    assert result.diagnostic == (
        "Subagent failure (provider: codex; stage: prompt; category: upstream)"
    )
    _assert_no_secret(result, events)


async def test_the_stock_provider_without_credentials_fails_to_start(
    codex_binary: str, codex_home: Path, workspace: Path, monkeypatch
) -> None:
    """Codex alone would retry for ever; the `account/read` preflight refuses at once."""
    from subagent_codex import CodexConfig, CodexProvider

    monkeypatch.setenv("OPENAI_API_KEY", "sk-inherited-never-passed")
    config = CodexConfig(command=codex_binary, cwd=workspace, env={"CODEX_HOME": str(codex_home)})
    started = time.monotonic()
    with anyio.fail_after(30), pytest.raises(SubagentStartError) as caught:
        await CodexProvider(config).start(SubagentRequest(prompt="go"))
    assert time.monotonic() - started < 10.0
    assert caught.value.diagnostic == (
        "Subagent failure (provider: codex; stage: initialize; category: authentication)"
    )


async def test_stall_then_cancel_is_aborted_with_partial_output(stub_factory, stub_config) -> None:
    from subagent_codex import CodexProvider

    stub = stub_factory([{"stall": True, "text": "partial answer"}])
    cancel = CancelSignal()
    with anyio.fail_after(60):
        run = await CodexProvider(stub_config(stub)).start(
            SubagentRequest(prompt="go", cancel=cancel)
        )
        async with run:
            async for event in run.events():
                if getattr(event, "text", "").endswith("answer"):
                    break
            started = time.monotonic()
            cancel.cancel()
            result = await run.result()
            assert time.monotonic() - started < 0.5
            assert (result.stop_reason, result.output, result.diagnostic) == (
                "aborted",
                "partial answer",
                None,
            )
            assert await run.dispose() is None


async def test_idle_deadline_ends_a_stalled_turn(stub_factory, stub_config, run_once) -> None:
    stub = stub_factory([{"stall": True, "text": "partial answer"}])
    result, disposed, _ = await run_once(stub_config(stub, idle_timeout_seconds=1.0))
    assert (result.stop_reason, result.output) == ("error", "partial answer")
    assert result.diagnostic == (
        "Subagent failure (provider: codex; stage: prompt; category: timeout)"
    )
    assert disposed is None


async def test_structured_output(stub_factory, stub_config, run_once) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    stub = stub_factory([{"text": '{"answer": 42}'}])
    from subagent_codex import CodexProvider

    config = stub_config(stub)
    with anyio.fail_after(60):
        run = await CodexProvider(config).start(SubagentRequest(prompt="go", output_schema=schema))
        async with run:
            result = await run.result()
    assert (result.stop_reason, result.output) == ("completed", '{"answer": 42}')
    assert result.structured_output == {"answer": 42}
    text = stub.requests[0].get("text")
    assert isinstance(text, dict)
    assert text["format"]["schema"] == schema


async def test_an_answer_outside_the_schema_is_output_schema(
    stub_factory, stub_config, run_once
) -> None:
    schema = {"type": "object", "required": ["answer"]}
    stub = stub_factory([{"text": "not json at all"}])
    result, _, _ = await run_once(
        stub_config(stub), SubagentRequest(prompt="go", output_schema=schema)
    )
    assert result.stop_reason == "error"
    assert result.diagnostic == (
        "Subagent failure (provider: codex; stage: prompt; category: output-schema)"
    )


async def test_codex_home_gets_no_rollouts_and_config_stays(
    stub_factory, stub_config, run_once, codex_home: Path, workspace: Path
) -> None:
    config_toml = codex_home / "config.toml"
    config_toml.write_text('# the user\'s own settings\nmodel = "o3"\n', encoding="utf-8")
    before = config_toml.read_bytes()
    stub = stub_factory([{"exec": "echo hi > a.txt"}, {"text": "done"}])
    result, _, _ = await run_once(stub_config(stub))
    assert result.stop_reason == "completed"
    assert _names(workspace) == ["a.txt"]  # the sandboxed command ran
    assert config_toml.read_bytes() == before
    assert _rollouts(codex_home) == []


async def test_cancel_during_a_running_command_leaves_no_shell(
    stub_factory, stub_config, workspace: Path
) -> None:
    """Codex's own command shell (and its sandbox) is part of the tree the ladder ends."""
    from subagent_codex import CodexProvider

    stub = stub_factory([{"exec": "echo up > started; exec sleep 300"}, {"stall": True}])
    cancel = CancelSignal()
    marker = anyio.Path(workspace / "started")
    with anyio.fail_after(60):
        run = await CodexProvider(stub_config(stub)).start(
            SubagentRequest(prompt="go", cancel=cancel)
        )
        async with run:
            # The shell is another process: its marker file is the signal we can see.
            while not await marker.exists():  # noqa: ASYNC110
                await anyio.sleep(0.02)
            cancel.cancel()
            result = await run.result()
            assert (result.stop_reason, result.diagnostic) == ("aborted", None)
            assert await run.dispose() is None
