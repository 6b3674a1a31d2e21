"""`remote=`: the fake CLI on another host (a throwaway sshd on 127.0.0.1) under the guard."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_claude.testing import script_env
from subagent_core import SubagentRegistry, SubagentRequest
from subagent_core.testing import open_test_sshd, sshd_available

pytestmark = pytest.mark.skipif(not sshd_available(), reason="OpenSSH server not installed")


async def test_a_remote_run_completes_and_leaves_nothing(tmp_path: Path) -> None:
    with anyio.fail_after(90):
        async with open_test_sshd() as sshd:
            config = ClaudeConfig(
                command=sys.executable,
                args=["-m", "subagent_claude.testing"],
                cwd=tmp_path,
                env=script_env({"text": "from afar", "tool": {"name": "Bash", "input": {}}}),
                remote=sshd.remote,
            )
            registry = SubagentRegistry()
            registry.register(ClaudeProvider(config))
            run = await registry.start("claude", SubagentRequest(prompt="go"))
            async with run:
                result = await run.result()
                disposed = await run.dispose()
    assert (result.stop_reason, result.output, disposed) == ("completed", "from afar", None)
    assert result.diagnostic == (
        "Claude permission (policy: reject; tool kind: execute; decision: reject_once)"
    )
