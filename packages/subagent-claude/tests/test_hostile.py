"""Hostile children: each settles classified, memory stays bounded, nothing is left."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_claude.testing import fake_claude_argv
from subagent_core import (
    EventsDropped,
    PermissionAsk,
    SubagentRegistry,
    SubagentRequest,
)
from subagent_core.kit import DEFAULT_EVENT_CAPACITY, ChildStderr

MakeConfig = Callable[..., ClaudeConfig]
P = "Subagent failure (provider: claude; stage: "


async def test_flood_is_bounded(fake_config: MakeConfig) -> None:
    registry = SubagentRegistry()
    registry.register(ClaudeProvider(fake_config({"flood_frames": 4000}, max_output_bytes=65536)))
    with anyio.fail_after(60):
        run = await registry.start("claude", SubagentRequest(prompt="go"))
        async with run:
            result = await run.result()  # nobody reads events while the child floods
            events = [event async for event in run.events()]
            disposed = await run.dispose()
    assert (result.stop_reason, result.output, disposed) == ("completed", "PONG", None)
    assert len(events) <= DEFAULT_EVENT_CAPACITY + 1
    assert isinstance(events[0], EventsDropped)


async def test_flood_partial_output_is_cut(fake_config: MakeConfig, run_once: Any) -> None:
    config = fake_config(
        {"flood_frames": 400, "result": {"subtype": "error_brand_new"}}, max_output_bytes=4096
    )
    result, _ = await run_once(config)
    assert result.stop_reason == "error"
    assert len(result.output.encode()) <= 4096 + 64


async def test_garbage_frame_is_protocol(fake_config: MakeConfig, run_once: Any) -> None:
    result, disposed = await run_once(fake_config({"garbage": True}))
    assert (result.stop_reason, result.diagnostic, disposed) == (
        "error",
        P + "prompt; category: protocol)",
        None,
    )


async def test_frame_over_the_limit_is_transport(fake_config: MakeConfig, run_once: Any) -> None:
    config = fake_config({"huge_frame_bytes": 200_000}, max_frame_bytes=65536)
    result, disposed = await run_once(config)
    assert (result.stop_reason, result.diagnostic, disposed) == (
        "error",
        P + "prompt; category: transport)",
        None,
    )


async def test_death_mid_frame_reports_the_exit_code(
    fake_config: MakeConfig, run_once: Any
) -> None:
    result, disposed = await run_once(fake_config({"die_mid_frame": 3}))
    assert (result.stop_reason, result.diagnostic, disposed) == (
        "error",
        P + "process; category: process-exit; exit code: 3)",
        None,
    )
    assert result.output == "PONG"  # what was said before the crash is kept


@pytest.mark.parametrize("how", ["setsid", "double_fork", "plain"])
async def test_escapees_are_gone(
    fake_config: MakeConfig, run_once: Any, tmp_path: Path, how: str
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    config = fake_config({"grandchild": how, "pid_file": str(pid_file)})
    result, disposed = await run_once(config, seconds=20)
    assert (result.stop_reason, disposed) == ("completed", None)
    pid = int(pid_file.read_text(encoding="utf-8"))
    gone = not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert gone


async def test_can_use_tool_storm_with_a_policy(fake_config: MakeConfig, run_once: Any) -> None:
    result, disposed = await run_once(fake_config({"permission_storm": 2000}), seconds=60)
    assert (result.stop_reason, disposed) == ("completed", None)
    assert result.diagnostic == (
        "Claude permission (policy: reject; tool kind: execute; decision: reject_once)"
    )


async def test_can_use_tool_storm_with_a_callback_is_bounded(
    fake_config: MakeConfig, run_once: Any
) -> None:
    in_flight = 0
    most = 0
    full = anyio.Event()

    async def callback(ask: PermissionAsk) -> str | None:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        if in_flight >= 8:
            full.set()
        await full.wait()
        in_flight -= 1
        return "reject_once"

    config = fake_config({"permission_storm": 200}, permission=callback)
    result, disposed = await run_once(config, seconds=60)
    assert (result.stop_reason, disposed) == ("completed", None)
    assert most <= 8


async def test_unknown_control_request_gets_a_fixed_error(
    fake_config: MakeConfig, run_once: Any, tmp_path: Path
) -> None:
    record = tmp_path / "record.jsonl"
    config = fake_config({"unknown_control": True, "record_file": str(record)})
    result, disposed = await run_once(config)
    assert (result.stop_reason, result.diagnostic, disposed) == ("completed", None, None)
    answers = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    errors = [a for a in answers if a.get("response", {}).get("subtype") == "error"]
    assert [e["response"]["error"] for e in errors] == ["Unsupported control request."]


async def test_env_scrub_and_removal(
    fake_config: MakeConfig, run_once: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-parent-SECRET")
    monkeypatch.setenv("IS_SANDBOX", "yes")
    names = ["ANTHROPIC_API_KEY", "IS_SANDBOX", "HOME"]
    script = {"echo_env": names}
    removed, _ = await run_once(fake_config(script, env={"IS_SANDBOX": None}))
    seen = json.loads(removed.output)
    assert seen["ANTHROPIC_API_KEY"] is None
    assert seen["IS_SANDBOX"] is None
    assert seen["HOME"] == os.environ["HOME"]
    given, _ = await run_once(fake_config(script, env={"ANTHROPIC_API_KEY": "sk-given"}))
    assert json.loads(given.output)["ANTHROPIC_API_KEY"] == "sk-given"
    assert json.loads(given.output)["IS_SANDBOX"] == "yes"


async def test_a_host_callback_slower_than_the_idle_bound_does_not_time_out(
    fake_config: MakeConfig, run_once: Any
) -> None:
    # The CLI waits on the parent's can_use_tool answer for four bounds (a human deciding):
    # that silence is the parent's, so the run completes and the tool was allowed.
    async def slow_human(ask: Any) -> str | None:
        await anyio.sleep(2.0)
        return "allow_once"

    script = {"tool": {"name": "Bash", "input": {}}}
    config = fake_config(script, permission=slow_human, idle_timeout_seconds=0.5)
    result, disposed = await run_once(config, seconds=20)
    assert (result.stop_reason, result.diagnostic, disposed) == ("completed", None, None)


async def test_stderr_is_drained_into_its_log_and_never_passed_through(
    fake_config: MakeConfig, run_once: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The CLI's own log lines (session ids, tokens) never reach our stderr by default."""
    secret = "sk-claude-stderr-secret-7"
    # `sh` writes the line as the CLI would, then becomes the fake CLI (same pid, same pipe).
    wrapper = f'echo "token={secret}" >&2; exec "$@"'
    argv = fake_claude_argv()
    logs = tmp_path / "logs"
    config = fake_config(
        {"text": "PONG"},
        command="/bin/sh",
        args=["-c", wrapper, "sh", *argv],
        child_stderr=ChildStderr(log_dir=logs),
    )
    result, disposed = await run_once(config)
    assert (result.stop_reason, result.output, disposed) == ("completed", "PONG", None)
    assert secret not in capfd.readouterr().err
    assert [log.read_text("utf-8") for log in logs.iterdir()] == [f"token={secret}\n"]
