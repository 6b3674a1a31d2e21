"""Keyed end-to-end: a real model-backed ACP agent. Skips itself without DEEPSEEK_API_KEY.

The agent is `ACP_E2E_COMMAND` (a shell-style command line) when set, else `harness acp-agent`
when the harness is importable or on PATH; with neither, the test skips.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import SubagentRegistry, SubagentRequest

pytestmark = pytest.mark.keyed


def agent_argv() -> list[str]:
    if not os.environ.get("DEEPSEEK_API_KEY"):
        pytest.skip("DEEPSEEK_API_KEY is not set")
    command = os.environ.get("ACP_E2E_COMMAND")
    if command:
        return shlex.split(command)
    if importlib.util.find_spec("harness") is not None:
        return [sys.executable, "-m", "harness", "acp-agent"]
    found = shutil.which("harness")
    if found:
        return [found, "acp-agent"]
    pytest.skip("neither ACP_E2E_COMMAND nor `harness acp-agent` is available")


def config(argv: list[str], cwd: Path, permission: str) -> ACPConfig:
    env = {"DEEPSEEK_API_KEY": os.environ["DEEPSEEK_API_KEY"]}
    for name, value in os.environ.items():
        if name.startswith("DSH_") or name == "DEEPSEEK_BASE_URL":
            env[name] = value
    return ACPConfig(
        command=argv[0],
        args=argv[1:],
        cwd=cwd,
        permission=permission,  # type: ignore[arg-type]
        env=env,
        dispose_eof_grace_seconds=2.0,
        dispose_grace_seconds=2.0,
        dispose_kill_grace_seconds=2.0,
    )


async def run(cfg: ACPConfig, prompt: str):
    registry = SubagentRegistry()
    registry.register(ACPProvider(cfg))
    with anyio.fail_after(300):
        started = await registry.start("acp", SubagentRequest(prompt=prompt))
        async with started:
            return await started.result()


@pytest.mark.timeout(330)
async def test_reject_policy_pong(tmp_path: Path) -> None:
    result = await run(config(agent_argv(), tmp_path, "reject"), "reply exactly PONG")
    assert result.stop_reason == "completed", result.diagnostic
    assert "PONG" in result.output


@pytest.mark.timeout(330)
async def test_allow_policy_writes_proof(tmp_path: Path) -> None:
    prompt = (
        "Use your process tool to write the text ACP_CHILD_WAS_HERE into the file proof.txt "
        "in your current working directory, then reply DONE."
    )
    result = await run(config(agent_argv(), tmp_path, "allow"), prompt)
    assert result.stop_reason == "completed", result.diagnostic
    assert "ACP_CHILD_WAS_HERE" in (tmp_path / "proof.txt").read_text("utf-8")
