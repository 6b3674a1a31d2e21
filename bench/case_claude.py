"""Claude Code: native (`subagent-claude`) against ACP through `claude-agent-acp` (issue 27).

Both sides run the real Claude Code CLI against the same loopback Messages stub, with the same
prompt and a throwaway HOME: the native provider drives the CLI bundled in `claude-agent-sdk`
(the `[cli]` extra) over its stream-json control protocol; the ACP provider drives the Node
adapter `@zed-industries/claude-agent-acp` (installed here with `npm --ignore-scripts` into a
cache directory), told to run the same CLI binary through `CLAUDE_CODE_EXECUTABLE`. Report only: time from `start()` to
the settled result, and `dispose()` alone (the adapter ignores stdin EOF, so its dispose waits
out the EOF grace before SIGTERM). The case is skipped, saying why, when the CLI or the adapter
cannot be installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _context import BenchError, Context, live_descendants
from _report import Section, Target
from _timing import Sample, Subject, paired, ratios
from subagent_acp import ACPConfig, ACPProvider
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_claude._argv import bundled_cli
from subagent_claude.testing import MessagesStub, stub_env, text_turn
from subagent_core import SubagentProvider, SubagentRequest

ADAPTER = "@zed-industries/claude-agent-acp"
TEXT = "PONG"


def _adapter() -> tuple[Path | None, str | None]:
    """The adapter's bin, installed once into the user cache; or why it is not available."""
    npm = shutil.which("npm")
    if npm is None:
        return None, "npm is not installed"
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    prefix = cache / "subagent-bench" / "claude-agent-acp"
    binary = prefix / "node_modules" / ".bin" / "claude-agent-acp"
    if binary.exists():
        return binary, None
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            npm,
            "install",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(prefix),
            ADAPTER,
        ],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
        check=False,
    )
    if done.returncode != 0 or not binary.exists():
        return None, f"npm install {ADAPTER} failed (exit {done.returncode})"
    return binary, None


def _subject(provider: SubagentProvider, cwd: Path, disposes: list[float]) -> Subject:
    """Times start → settled result; records `dispose()` alone into `disposes`."""

    async def subject() -> float:
        started = time.perf_counter()
        run = await provider.start(SubagentRequest(prompt="Reply PONG", cwd=cwd))
        try:
            result = await run.result()
            elapsed = time.perf_counter() - started
            before = time.perf_counter()
            teardown = await run.dispose()
            disposes.append(time.perf_counter() - before)
        finally:
            await run.dispose()
        if result.stop_reason != "completed" or TEXT not in result.output:
            raise BenchError(f"{provider.name} run ended {result.stop_reason}")
        if teardown is not None or live_descendants():
            raise BenchError(f"{provider.name}: something of the run outlived dispose()")
        return elapsed

    return subject


async def native_vs_acp(ctx: Context) -> list[Section]:
    section = Section(
        "Claude Code: native stream-json vs ACP via claude-agent-acp, same stub, same prompt",
        notes=[
            "Both run the real CLI keyless against the loopback Messages stub (one text "
            "answer); the clock times start → settled result, and `dispose()` alone. Default "
            "graces on both (EOF 0.5 s, TERM 0.5 s, KILL 3 s). Report only.",
        ],
    )
    cli = bundled_cli() or shutil.which("claude")
    if cli is None:
        section.error = "skipped: the Claude Code CLI is not installed (subagent-claude[cli])"
        return [section]
    adapter, why = _adapter()
    if adapter is None:
        section.error = f"skipped: {why}"
        return [section]
    with MessagesStub([text_turn(TEXT)]) as stub:
        env: dict[str, str | None] = dict(stub_env(stub, ctx.work / "claude-home"))
        workspace = ctx.work / "claude-workspace"
        workspace.mkdir(exist_ok=True)
        native = ClaudeProvider(ClaudeConfig(command=str(cli), env=env))
        # The adapter runs the same CLI binary (its SDK's `pathToClaudeCodeExecutable`). It
        # always passes --allow-dangerously-skip-permissions, which the CLI refuses as root
        # unless IS_SANDBOX=1; the native provider never passes it.
        acp_env = {**env, "CLAUDE_CODE_EXECUTABLE": str(cli)}
        if sys.platform != "win32" and os.geteuid() == 0:
            acp_env["IS_SANDBOX"] = "1"
        acp = ACPProvider(ACPConfig(command=str(adapter), env=acp_env, provider_name="claude-acp"))
        disposes: dict[str, list[float]] = {"native": [], "acp": []}
        samples = await paired(
            {
                "native": _subject(native, workspace, disposes["native"]),
                "acp": _subject(acp, workspace, disposes["acp"]),
            },
            warmup=1,
            repeat=ctx.reps(5, 2),
        )
    # The warm-up round's dispose is dropped so both lists pair with the measured rounds.
    native_dispose = Sample(tuple(disposes["native"][1:]))
    acp_dispose = Sample(tuple(disposes["acp"][1:]))
    section.add("native: start → result", samples["native"], "s")
    section.add("ACP (claude-agent-acp): start → result", samples["acp"], "s")
    section.add("start → result, ACP / native", ratios(samples["acp"], samples["native"]), "×")
    section.add("native: dispose()", native_dispose, "s")
    section.add("ACP (claude-agent-acp): dispose()", acp_dispose, "s")
    section.add("dispose(), ACP / native", ratios(acp_dispose, native_dispose), "×")
    section.add(
        "start → result, native / ACP",
        ratios(samples["native"], samples["acp"]),
        "×",
        Target("<=", 0.8),
    )
    section.add(
        "dispose(), native / ACP", ratios(native_dispose, acp_dispose), "×", Target("<=", 0.2)
    )
    return [section]
