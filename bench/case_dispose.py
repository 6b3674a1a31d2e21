"""`dispose()` of a settled run whose child ignores stdin EOF and traps SIGTERM (issue 20 item 3).

Real agents ignore EOF (claude-agent-acp, codex-acp); with the providers' default graces the
goodbye must stay short (target ≤ 1.5 s). A cooperative child, which exits on EOF by itself,
is measured beside it in the same rounds as the baseline; after each dispose nothing of the run
may be alive.
"""

from __future__ import annotations

import json
import time

from _context import PYTHON, BenchError, Context, live_descendants
from _report import Section, Target
from _timing import Subject, paired, ratios
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import SubagentProvider, SubagentRequest
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript

TEXT = "answered"


def _acp(deaf: bool) -> ACPProvider:
    script: dict[str, object] = {"text": TEXT}
    if deaf:
        script |= {"ignore_eof": True, "trap_sigterm": True}
    return ACPProvider(
        ACPConfig(
            command=PYTHON, args=["-m", "subagent_acp.testing", "--script-json", json.dumps(script)]
        )
    )


def _sdk(deaf: bool) -> SDKProvider:
    script = FakeScript(text=TEXT, ignore_eof=deaf, trap_sigterm=deaf, ignore_shutdown=deaf)
    return SDKProvider(
        SDKConfig(command=PYTHON, args=["-m", "subagent_sdk.testing", "--json", script.to_json()])
    )


def dispose_subject(ctx: Context, provider: SubagentProvider) -> Subject:
    """The run completes; the clock times `dispose()` alone."""

    async def subject() -> float:
        run = await provider.start(SubagentRequest(prompt="bench", cwd=ctx.work))
        try:
            result = await run.result()
            started = time.perf_counter()
            teardown = await run.dispose()
            elapsed = time.perf_counter() - started
        finally:
            await run.dispose()
        if result.stop_reason != "completed" or result.output != TEXT:
            raise BenchError(f"{provider.name} run ended {result.stop_reason}")
        if teardown is not None or live_descendants():
            raise BenchError(f"{provider.name}: something of the run outlived dispose()")
        return elapsed

    return subject


async def dispose(ctx: Context) -> list[Section]:
    acp, sdk = ACPConfig(command=PYTHON), SDKConfig(command=PYTHON)
    section = Section(
        "dispose() of a settled run, EOF-deaf and TERM-trapping child, default graces",
        notes=[
            "The run completed; the clock times `dispose()` alone, with each provider's "
            f"default graces (ACP: EOF {acp.dispose_eof_grace_seconds:g} s, TERM "
            f"{acp.dispose_grace_seconds:g} s, KILL {acp.dispose_kill_grace_seconds:g} s; "
            f"SDK: shutdown {sdk.shutdown_timeout_seconds:g} s, EOF "
            f"{sdk.dispose_eof_grace_seconds:g} s, TERM {sdk.dispose_grace_seconds:g} s, "
            f"KILL {sdk.dispose_kill_grace_seconds:g} s). The SDK child also ignores "
            "`shutdown`. Baseline: the same fake child that exits on EOF.",
        ],
    )
    for kind, build in (("ACP", _acp), ("SDK", _sdk)):
        samples = await paired(
            {
                "deaf": dispose_subject(ctx, build(True)),
                "cooperative": dispose_subject(ctx, build(False)),
            },
            warmup=1,
            repeat=ctx.reps(4, 2),
        )
        section.add(f"{kind} dispose, deaf child", samples["deaf"], "s", Target("<=", 1.5, "s"))
        section.add(f"{kind} dispose, cooperative child", samples["cooperative"], "s")
        section.add(
            f"{kind} dispose, deaf / cooperative",
            ratios(samples["deaf"], samples["cooperative"]),
            "×",
        )
    return [section]
