"""`harness demo`, `harness providers` and the fake passthroughs, as a person runs them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import anyio.abc
from harness._demo.bodies import SECRET
from subagent_core import child_env
from subagent_core.kit import open_managed_process


async def _harness(args: list[str], *, cwd: Path | None = None) -> tuple[int | None, str, str]:
    async with open_managed_process(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
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


def _table_rows(out: str) -> dict[str, list[str]]:
    """The result table's rows by scenario: each cell's wrapped lines joined back together."""
    rows: dict[str, list[str]] = {}
    cells: list[list[str]] = []

    def flush() -> None:
        if cells:
            joined = [
                " ".join(part for part in column if part) for column in zip(*cells, strict=True)
            ]
            rows[joined[0]] = joined[1:]
            cells.clear()

    for line in out.splitlines():
        if line.startswith("│"):
            cells.append([cell.strip() for cell in line.split("│")[1:-1]])
        elif line.startswith(("├", "└")):
            flush()
    return rows


async def test_demo_exits_0_with_every_scenario_matched(tmp_path: Path) -> None:
    with anyio.fail_after(180):
        code, out, err = await _harness(["demo", "--no-live"], cwd=tmp_path)
    assert code == 0, out + err
    rows = _table_rows(out)
    assert rows == {
        "agent: command + in-process child": [
            "completed",
            "The command printed harness-demo-ok and the child confirmed it.",
            "—",
            "yes",
        ],
        "acp: fake ACP child": ["completed", "Hello from the fake ACP child.", "—", "yes"],
        "acp: harness acp-agent": ["completed", "Hello over ACP from harness.", "—", "yes"],
        "claude: fake Claude CLI": ["completed", "Hello from the fake Claude CLI.", "—", "yes"],
        "claude: Write refused by the default policy": [
            "completed",
            "I could not write it.",
            "Claude permission (policy: reject; tool kind: edit; decision: reject_once)",
            "yes",
        ],
        "sdk: fake SDK runtime": ["completed", "Hello from the fake SDK runtime.", "—", "yes"],
        "codex: fake app-server": [
            "completed",
            "Hello from the fake Codex app-server.",
            "—",
            "yes",
        ],
        "sdk: harness sdk-runtime": ["completed", "Hello over the SDK protocol.", "—", "yes"],
        "acp: child crashes mid-prompt, secret on stderr": [
            "error",
            "Working on it",
            "Subagent failure (provider: acp; stage: process; category: process-exit; "
            "exit code: 3)",
            "yes",
        ],
        "sdk: sdk-runtime turn fails, secret in model error": [
            "error",
            "",
            "Subagent failure (provider: dsh-sdk; stage: session-run; category: child-error; "
            "stop reason: error)",
            "yes",
        ],
        "acp: cancel stops the child's command": ["aborted", "", "—", "yes"],
    }
    assert "11/11 scenarios matched" in out
    assert SECRET not in out
    assert SECRET not in err


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
        " — the command was not found (is it installed and on PATH?)"
    )
