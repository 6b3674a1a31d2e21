"""Codex through `codex-acp` (the ACP provider) vs natively (`subagent-codex`), same stub.

Both drive the same codex engine against one loopback Responses stub (keyless: a mock model
provider, `model = "gpt-5"`); the clock times start-to-result and `dispose()` separately. A
report, not a target: the adapter is another program. `codex-acp` is installed with npm
(`--ignore-scripts`) into a cache directory; without npm, or if the install fails, the case is
skipped with the reason.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from _context import BenchError, Context, live_descendants
from _report import Section, Target
from _timing import Sample, Subject, paired, ratios
from subagent_acp import ACPConfig, ACPProvider
from subagent_codex import CodexConfig, CodexProvider
from subagent_codex._config import bundled_codex
from subagent_codex.testing import STUB_KEY_ENV, open_responses_stub, stub_provider_overrides
from subagent_core import SubagentProvider, SubagentRequest

TEXT = "PONG"
_NPM_PACKAGE = "@zed-industries/codex-acp"
_CACHE = Path(tempfile.gettempdir()) / "subagent-bench-codex-acp"


def _codex_acp() -> str:
    """The `codex-acp` binary, installed on first use.

    Raises:
        BenchError: npm is missing or the install failed (the case reports it as skipped).
    """
    binary = _CACHE / "node_modules" / ".bin" / "codex-acp"
    if binary.exists():
        return str(binary)
    npm = shutil.which("npm")
    if npm is None:
        raise BenchError("skipped: npm is not installed")
    _CACHE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", str(_CACHE),
         _NPM_PACKAGE],
        capture_output=True,
        timeout=300,
        check=False,
    )  # fmt: skip
    if done.returncode != 0 or not binary.exists():
        raise BenchError(f"skipped: npm install {_NPM_PACKAGE} failed")
    return str(binary)


def _subject(ctx: Context, provider: SubagentProvider, timings: dict[str, list[float]]) -> Subject:
    """Times start → result; `dispose()` is recorded beside it."""
    name = provider.name

    async def subject() -> float:
        started = time.perf_counter()
        run = await provider.start(SubagentRequest(prompt="bench", cwd=ctx.work))
        try:
            result = await run.result()
            answered = time.perf_counter()
            teardown = await run.dispose()
            timings.setdefault(name, []).append(time.perf_counter() - answered)
        finally:
            await run.dispose()
        if result.stop_reason != "completed" or not result.output.endswith(TEXT):
            raise BenchError(f"{name} run ended {result.stop_reason}")
        if teardown is not None or live_descendants():
            raise BenchError(f"{name}: something of the run outlived dispose()")
        return answered - started

    return subject


async def codex(ctx: Context) -> list[Section]:
    section = Section(
        "Codex: codex-acp (ACP adapter) vs native app-server, same loopback stub",
        notes=[
            "Start to result, then `dispose()`, each provider with its default graces; both "
            "children are the codex engine against one scripted Responses stub. Report only.",
        ],
    )
    if bundled_codex() is None:
        section.error = "skipped: subagent-codex[cli] (the codex binary) is not installed"
        return [section]
    try:
        adapter = _codex_acp()
    except BenchError as error:
        section.error = str(error)
        return [section]
    home = ctx.work / "codex-home"
    tmpdir = ctx.work / "codex-tmp"
    home.mkdir(exist_ok=True)
    tmpdir.mkdir(exist_ok=True)
    with open_responses_stub([{"text": TEXT, "usage": {"input": 5, "output": 2}}]) as stub:
        overrides = stub_provider_overrides(stub.base_url)
        env: dict[str, str | None] = {
            "CODEX_HOME": str(home),
            "TMPDIR": str(tmpdir),
            STUB_KEY_ENV: "sk-bench",
        }
        args = [part for key, value in overrides.items() for part in ("-c", f"{key}={value}")]
        acp = ACPProvider(ACPConfig(provider_name="codex-acp", command=adapter, args=args, env=env))
        native = CodexProvider(CodexConfig(config_overrides=overrides, env=env))
        timings: dict[str, list[float]] = {}
        samples = await paired(
            {
                "codex-acp": _subject(ctx, acp, timings),
                "codex": _subject(ctx, native, timings),
            },
            warmup=1,
            repeat=ctx.reps(5, 2),
        )
    dispose = {name: Sample(tuple(values[1:])) for name, values in timings.items()}
    section.add("codex-acp: start to result", samples["codex-acp"], "s")
    section.add("native: start to result", samples["codex"], "s")
    section.add(
        "start to result, codex-acp / native", ratios(samples["codex-acp"], samples["codex"]), "×"
    )
    section.add("codex-acp: dispose()", dispose["codex-acp"], "s")
    section.add("native: dispose()", dispose["codex"], "s")
    section.add(
        "start to result, native / codex-acp",
        ratios(samples["codex"], samples["codex-acp"]),
        "×",
        Target("<=", 1.0),
    )
    section.add(
        "dispose(), native / codex-acp",
        ratios(dispose["codex"], dispose["codex-acp"]),
        "×",
        Target("<=", 0.2),
    )
    return [section]
