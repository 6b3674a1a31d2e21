"""Start, cancel, dispose and concurrency cases of this provider on the fake CLI; the contract
every provider shares runs in test_conformance.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_core import (
    SubagentRegistry,
    SubagentRequest,
    SubagentStartError,
)

MakeConfig = Callable[..., ClaudeConfig]


def _registry(config: ClaudeConfig) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(ClaudeProvider(config))
    return registry


async def _start_error(config: ClaudeConfig, request: SubagentRequest) -> SubagentStartError:
    with anyio.fail_after(30), pytest.raises(SubagentStartError) as caught:
        await _registry(config).start("claude", request)
    return caught.value


async def test_initialize_refused_is_protocol(fake_config: MakeConfig) -> None:
    error = await _start_error(
        fake_config({"refuse_initialize": True}), SubagentRequest(prompt="go")
    )
    assert error.diagnostic == (
        "Subagent failure (provider: claude; stage: initialize; category: protocol)"
    )
    assert "SECRET" not in str(error)


async def test_relative_request_cwd_is_configuration(fake_config: MakeConfig) -> None:
    config = fake_config(cwd=None)
    error = await _start_error(config, SubagentRequest(prompt="go", cwd=Path("relative")))
    assert error.diagnostic == (
        "Subagent failure (provider: claude; stage: initialize; category: configuration)"
    )


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
