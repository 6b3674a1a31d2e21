"""SDK: one whole `SDKProvider` run on the fake runtime against the bare process floor."""

from __future__ import annotations

import time

from _context import PYTHON, BenchError, Context
from _report import Section
from _timing import Subject, paired, process_subject, ratios
from subagent_core import SubagentRequest
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript

TEXT = "Hello from the fake SDK runtime."


def provider_whole(ctx: Context) -> Subject:
    script = FakeScript(text=TEXT)
    provider = SDKProvider(
        SDKConfig(command=PYTHON, args=["-m", "subagent_sdk.testing", "--json", script.to_json()])
    )

    async def subject() -> float:
        started = time.perf_counter()
        run = await provider.start(SubagentRequest(prompt="bench", cwd=ctx.work))
        async with run:
            result = await run.result()
        elapsed = time.perf_counter() - started
        if result.stop_reason != "completed" or result.output != TEXT:
            raise BenchError(f"SDKProvider run ended {result.stop_reason}")
        return elapsed

    return subject


async def run_overhead(ctx: Context) -> list[Section]:
    section = Section(
        "SDK run overhead vs the bare process floor",
        notes=[
            "One whole run: spawn the fake runtime (`python -m subagent_sdk.testing`), "
            "initialize, one prompt, settle, dispose. Floor: `python -c pass` (an interpreter "
            "that does nothing).",
        ],
    )
    samples = await paired(
        {
            "provider": provider_whole(ctx),
            "floor": process_subject([PYTHON, "-c", "pass"]),
        },
        warmup=ctx.reps(2, 1),
        repeat=ctx.reps(12, 3),
    )
    section.add("SDKProvider run", samples["provider"].scaled(1000), "ms")
    section.add("floor: python -c pass", samples["floor"].scaled(1000), "ms")
    section.add("SDKProvider run / floor", ratios(samples["provider"], samples["floor"]), "×")
    return [section]
