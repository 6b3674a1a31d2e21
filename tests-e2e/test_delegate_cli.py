"""`harness delegate` through the registry: an ACP child and an SDK child, from harness.toml."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from subagent_core import child_env
from subagent_core.kit import open_managed_process

RULES = [
    {"match": "DELEGATE-OK", "replies": [{"text": "Delegated and done.", "chunks": 2}]},
    {"match": "DELEGATE-FAIL", "replies": [{"status": 400}]},
]
FAILURES = {
    "acp": "diagnostic: Subagent failure (provider: acp; stage: prompt; category: transport)",
    "dsh-sdk": (
        "diagnostic: Subagent failure (provider: dsh-sdk; stage: session-run; "
        "category: child-error; stop reason: error)"
    ),
}


def _config(path: Path, base_url: str) -> Path:
    """Both children keep their sessions in a state dir beside the file, never the user's."""
    prefix = json.dumps([sys.executable])[1:-1]
    state = json.dumps(str(path.parent / "state"))
    graces = (
        "dispose_eof_grace_seconds = 0.5\ndispose_grace_seconds = 0.5\n"
        "dispose_kill_grace_seconds = 1.0\n"
    )
    path.write_text(
        f"""
[model]
base_url = "{base_url}"

[providers.acp]
kind = "acp"
command = {prefix}
args = ["-m", "harness", "acp-agent", "--base-url", "{base_url}", "--mode", "ask",
        "--state-dir", {state}]
{graces}
[providers.dsh-sdk]
kind = "sdk"
command = {prefix}
args = ["-m", "harness", "sdk-runtime", "--base-url", "{base_url}", "--mode", "ask",
        "--state-dir", {state}]
{graces}""",
        encoding="utf-8",
    )
    return path


async def _harness(args: list[str]) -> tuple[int | None, str, str]:
    async with open_managed_process(
        [sys.executable, "-m", "harness", *args],
        env=child_env({}),
        stdin="devnull",
        stderr="pipe",
    ) as process:
        out, err = bytearray(), bytearray()

        async def drain(stream: anyio.abc.ByteReceiveStream | None, into: bytearray) -> None:
            assert stream is not None
            async for chunk in stream:
                into.extend(chunk)

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain, process.stdout, out)
            tg.start_soon(drain, process.stderr, err)
        outcome = await process.wait()
    return outcome.exit_code, out.decode(), err.decode()


@pytest.mark.parametrize("provider", ["acp", "dsh-sdk"])
async def test_delegate_completes(
    provider: str, scripted_model: Any, workspace: Path, tmp_path: Path
) -> None:
    with anyio.fail_after(90):
        async with scripted_model(RULES) as server:
            config = _config(tmp_path / "harness.toml", server.base_url)
            code, out, err = await _harness(
                [
                    "delegate",
                    "DELEGATE-OK: go",
                    "--provider",
                    provider,
                    "--config",
                    str(config),
                    "--workspace",
                    str(workspace),
                ]
            )
    assert code == 0
    assert out == "Delegated and done.\n"
    assert "stop reason: completed\n" in err
    assert "diagnostic:" not in err


@pytest.mark.parametrize("provider", ["acp", "dsh-sdk"])
async def test_delegate_reports_a_failure_apart_from_the_output(
    provider: str, scripted_model: Any, workspace: Path, tmp_path: Path
) -> None:
    with anyio.fail_after(90):
        async with scripted_model(RULES) as server:
            config = _config(tmp_path / "harness.toml", server.base_url)
            code, out, err = await _harness(
                [
                    "delegate",
                    "DELEGATE-FAIL: go",
                    "--provider",
                    provider,
                    "--config",
                    str(config),
                    "--workspace",
                    str(workspace),
                ]
            )
    assert code == 1
    assert out == ""
    assert f"stop reason: error\n{FAILURES[provider]}\n" in err
