"""Keyed end-to-end runs against OpenAI itself; they skip without `OPENAI_API_KEY`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from subagent_core import SubagentRequest

pytestmark = pytest.mark.skipif(
    not os.environ.get("OPENAI_API_KEY"), reason="needs OPENAI_API_KEY (a real OpenAI key)"
)

# The stock provider takes its key from a login (`account/read`), not from the environment: a
# provider of our own reads OPENAI_API_KEY, which the child gets only through `env`.
_OVERRIDES = {
    "model_provider": '"openai_env"',
    "model_providers.openai_env": (
        '{ name = "OpenAI", base_url = "https://api.openai.com/v1", wire_api = "responses", '
        'env_key = "OPENAI_API_KEY" }'
    ),
}


def _config(codex_binary: str, codex_home: Path, child_tmpdir: Path, workspace: Path, **extra):
    from subagent_codex import CodexConfig

    env = {
        "CODEX_HOME": str(codex_home),
        "TMPDIR": str(child_tmpdir),
        "OPENAI_API_KEY": os.environ["OPENAI_API_KEY"],
    }
    return CodexConfig(
        command=codex_binary, cwd=workspace, env=env, config_overrides=_OVERRIDES, **extra
    )


async def test_pong(codex_binary, codex_home, child_tmpdir, workspace, run_once) -> None:
    config = _config(codex_binary, codex_home, child_tmpdir, workspace)
    result, disposed, _ = await run_once(
        config, SubagentRequest(prompt="Reply with exactly the word PONG."), seconds=120
    )
    assert result.stop_reason == "completed", result.diagnostic
    assert "PONG" in result.output
    assert result.usage is not None
    assert disposed is None


async def test_proof_file(codex_binary, codex_home, child_tmpdir, workspace, run_once) -> None:
    config = _config(codex_binary, codex_home, child_tmpdir, workspace, permission="allow")
    prompt = "Create a file named proof.txt in the current directory containing the word ok."
    result, _, _ = await run_once(config, SubagentRequest(prompt=prompt), seconds=180)
    assert result.stop_reason == "completed", result.diagnostic
    assert (workspace / "proof.txt").exists()
