"""Keyed end-to-end: the real CLI on the real Messages API. Skips itself without
ANTHROPIC_API_KEY (or without the CLI). The key reaches the child only through `env`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_claude.testing import QUIET_ENV
from subagent_core import SubagentRegistry, SubagentRequest, SubagentResult

pytestmark = pytest.mark.keyed


@pytest.fixture
def keyed_config(real_cli: str, tmp_path: Path) -> Callable[..., ClaudeConfig]:
    key = os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        pytest.skip("ANTHROPIC_API_KEY is not set")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)

    def build(**fields: object) -> ClaudeConfig:
        env = {
            **QUIET_ENV,
            "ANTHROPIC_API_KEY": key,
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        }
        return ClaudeConfig(command=real_cli, cwd=workspace, env=env, max_turns=4, **fields)  # type: ignore[arg-type]

    return build


async def _run(config: ClaudeConfig, prompt: str) -> tuple[SubagentResult, str | None]:
    registry = SubagentRegistry()
    registry.register(ClaudeProvider(config))
    with anyio.fail_after(180):
        run = await registry.start("claude", SubagentRequest(prompt=prompt))
        async with run:
            result = await run.result()
            disposed = await run.dispose()
    return result, disposed


async def test_pong(keyed_config: Callable[..., ClaudeConfig]) -> None:
    result, disposed = await _run(
        keyed_config(), "Reply with exactly the word PONG and nothing else."
    )
    assert (result.stop_reason, disposed) == ("completed", None)
    assert "PONG" in result.output
    assert result.usage is not None
    assert result.usage.cost is not None


async def test_proof_file(keyed_config: Callable[..., ClaudeConfig]) -> None:
    config = keyed_config(permission="allow")
    prompt = "Create a file named proof.txt in the current directory containing exactly CLAUDE_CHILD_WAS_HERE."
    result, _ = await _run(config, prompt)
    assert result.stop_reason == "completed"
    assert config.cwd is not None
    assert "CLAUDE_CHILD_WAS_HERE" in (config.cwd / "proof.txt").read_text(encoding="utf-8")
