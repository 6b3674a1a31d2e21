"""Start, publication, cancel, dispose and concurrency (core's seam rules) on the fake CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_core import (
    MessageChunk,
    SubagentRegistry,
    SubagentRequest,
    SubagentStartError,
)

MakeConfig = Callable[..., ClaudeConfig]
ABORTED = "subagent request was aborted before the Claude child started"


def _registry(config: ClaudeConfig) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(ClaudeProvider(config))
    return registry


async def _start_error(config: ClaudeConfig, request: SubagentRequest) -> SubagentStartError:
    with anyio.fail_after(30), pytest.raises(SubagentStartError) as caught:
        await _registry(config).start("claude", request)
    return caught.value


async def test_cancelled_before_start_spawns_nothing(fake_config: MakeConfig) -> None:
    request = SubagentRequest(prompt="go")
    request.cancel.cancel()
    error = await _start_error(fake_config(), request)
    assert (str(error), error.diagnostic) == (ABORTED, None)


async def test_cancel_during_the_handshake_rolls_back(fake_config: MakeConfig) -> None:
    request = SubagentRequest(prompt="go")
    config = fake_config({"hang_at": "initialize"})
    async with anyio.create_task_group() as tg:
        tg.start_soon(_cancel_soon, request)
        error = await _start_error(config, request)
    assert (str(error), error.diagnostic) == (ABORTED, None)


async def _cancel_soon(request: SubagentRequest) -> None:
    await anyio.sleep(0.3)  # the start is under way; the outcome does not depend on when
    request.cancel.cancel()


async def test_startup_timeout(fake_config: MakeConfig) -> None:
    config = fake_config({"hang_at": "initialize"}, startup_timeout_seconds=0.5)
    error = await _start_error(config, SubagentRequest(prompt="go"))
    assert error.diagnostic == (
        "Subagent failure (provider: claude; stage: initialize; category: timeout)"
    )


async def test_initialize_refused_is_protocol(fake_config: MakeConfig) -> None:
    error = await _start_error(
        fake_config({"refuse_initialize": True}), SubagentRequest(prompt="go")
    )
    assert error.diagnostic == (
        "Subagent failure (provider: claude; stage: initialize; category: protocol)"
    )
    assert "SECRET" not in str(error)


async def test_exit_during_the_handshake(fake_config: MakeConfig, tmp_path: Path) -> None:
    config = fake_config(command="/bin/sh", args=["-c", "exit 7"])
    error = await _start_error(config, SubagentRequest(prompt="go"))
    assert error.diagnostic == (
        "Subagent failure (provider: claude; stage: initialize; category: process-exit; exit code: 7)"
    )


async def test_command_not_found(fake_config: MakeConfig) -> None:
    config = fake_config(command="/nonexistent/claude", args=[])
    error = await _start_error(config, SubagentRequest(prompt="go"))
    assert error.diagnostic == (
        "Subagent failure (provider: claude; stage: process; category: process-start)"
    )


async def test_relative_request_cwd_is_configuration(fake_config: MakeConfig) -> None:
    config = fake_config(cwd=None)
    error = await _start_error(config, SubagentRequest(prompt="go", cwd=Path("relative")))
    assert error.diagnostic == (
        "Subagent failure (provider: claude; stage: initialize; category: configuration)"
    )


async def test_local_cancel_settles_at_once_and_keeps_partial_output(
    fake_config: MakeConfig,
) -> None:
    # One chunk: the cancel lands after it, so the partial output is exactly that text.
    config = fake_config({"hang_at": "prompt", "text": "half an answer", "chunks": 1})
    request = SubagentRequest(prompt="go")
    with anyio.fail_after(30):
        run = await _registry(config).start("claude", request)
        async with run:
            async for event in run.events():
                if isinstance(event, MessageChunk):
                    request.cancel.cancel()
                    break
            result = await run.result()
            disposed = await run.dispose()
    assert (result.stop_reason, result.diagnostic, disposed) == ("aborted", None, None)
    assert result.output == "half an answer"


async def test_dispose_without_result_settles_aborted(fake_config: MakeConfig) -> None:
    with anyio.fail_after(30):
        run = await _registry(fake_config({"hang_at": "prompt"})).start(
            "claude", SubagentRequest(prompt="go")
        )
        first = await run.dispose()
        second = await run.dispose()
        result = await run.result()
    assert (first, second, result.stop_reason, result.diagnostic) == (None, None, "aborted", None)


async def test_cancelled_holder_still_disposes(fake_config: MakeConfig) -> None:
    config = fake_config({"hang_at": "prompt", "ignore_eof": True, "trap_sigterm": True})
    with anyio.fail_after(30):
        run = await _registry(config).start("claude", SubagentRequest(prompt="go"))
        with anyio.move_on_after(0.2):
            async with run:
                await run.result()
        assert await run.dispose() is None


async def test_concurrent_runs_share_nothing(fake_config: MakeConfig, run_once: Any) -> None:
    results: dict[str, str] = {}

    async def one(text: str, script: dict[str, Any]) -> None:
        result, _ = await run_once(fake_config({"text": text, **script}))
        results[text] = f"{result.stop_reason}|{result.diagnostic}"

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, "a", {})
        tg.start_soon(one, "b", {"tool": {"name": "Bash", "input": {}}})
        tg.start_soon(one, "c", {"die_mid_frame": 5})
    assert results == {
        "a": "completed|None",
        "b": "completed|Claude permission (policy: reject; tool kind: execute; decision: reject_once)",
        "c": "error|Subagent failure (provider: claude; stage: process; category: process-exit; exit code: 5)",
    }


async def test_capabilities() -> None:
    provider = ClaudeProvider(ClaudeConfig(command="claude"))
    assert provider.name == "claude"
    assert provider.capabilities.output_schema is True
    assert provider.capabilities.depth_limit is False
    assert provider.inherits_parent_context is False
