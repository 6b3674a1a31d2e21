"""Keyed: the SDK provider driving the real `harness sdk-runtime` against DeepSeek.

Skips itself without `DEEPSEEK_API_KEY` or when the harness package is not installed (this
package's own nox session installs only subagent-sdk and its dependencies).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import anyio
import pytest
from subagent_core import SubagentRegistry, SubagentRequest
from subagent_sdk import SDKConfig, SDKProvider

KEY = os.environ.get("DEEPSEEK_API_KEY")

pytestmark = [
    pytest.mark.keyed,
    pytest.mark.skipif(not KEY, reason="needs DEEPSEEK_API_KEY"),
    pytest.mark.skipif(
        importlib.util.find_spec("harness") is None, reason="harness is not installed"
    ),
]


def _provider(workspace: Path) -> SDKProvider:
    assert KEY is not None
    return SDKProvider(
        SDKConfig(
            command=sys.executable,
            args=["-m", "harness", "sdk-runtime"],
            cwd=workspace,
            # Credential-shaped names are scrubbed from the inherited env: pass the key explicitly.
            env={"DEEPSEEK_API_KEY": KEY},
        )
    )


async def test_a_real_runtime_answers_pong(tmp_path: Path) -> None:
    registry = SubagentRegistry()
    registry.register(_provider(tmp_path))
    with anyio.fail_after(180):
        run = await registry.start(
            "dsh-sdk",
            SubagentRequest(
                prompt="Reply with exactly the word PONG and nothing else.", cwd=tmp_path
            ),
        )
        async with run:
            result = await run.result()
        assert await run.dispose() is None
    assert result.stop_reason == "completed", result.diagnostic
    assert "PONG" in result.output
    assert result.diagnostic is None
