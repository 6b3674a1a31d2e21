"""`harness demo`, `harness providers` and the fake passthroughs, as a person runs them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import anyio.abc
from subagent_core import child_env, open_managed_process


async def _harness(args: list[str], *, cwd: Path | None = None) -> tuple[int | None, str, str]:
    async with open_managed_process(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
        env=child_env({"COLUMNS": "200"}),
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


async def test_demo_exits_0_with_every_scenario_matched(tmp_path: Path) -> None:
    with anyio.fail_after(180):
        code, out, err = await _harness(["demo", "--no-live"], cwd=tmp_path)
    assert code == 0, err
    for row in (
        "agent: command + in-process child",
        "acp: fake ACP child",
        "acp: harness acp-agent",
        "sdk: fake SDK runtime",
        "sdk: harness sdk-runtime",
    ):
        assert row in out
    assert "5/5 scenarios matched" in out


async def test_providers_checks_each_one(tmp_path: Path) -> None:
    prefix = json.dumps(sys.executable)
    (tmp_path / "harness.toml").write_text(
        f"""
[providers.fake-acp]
kind = "acp"
command = {prefix}
args = ["-m", "harness", "fake-acp-child"]
dispose_eof_grace_seconds = 0.5

[providers.fake-sdk]
kind = "sdk"
command = {prefix}
args = ["-m", "harness", "fake-sdk-runtime"]
dispose_eof_grace_seconds = 0.5

[providers.missing]
kind = "acp"
command = "/nonexistent/agent-binary"
""",
        encoding="utf-8",
    )
    with anyio.fail_after(120):
        code, out, _ = await _harness(["providers", "--workspace", str(tmp_path)])
    assert code == 1
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 4}
    assert "│ ok" in lines["fake-acp"]
    assert "│ ok" in lines["fake-sdk"]
    assert lines["missing"].split("│")[5].strip() == (
        "failed: Subagent failure (provider: missing; stage: process; category: process-start)"
    )
