"""Streaming throughput with the run's events consumed vs not consumed (issue 13).

Both sides drive the same fake child with the same many-small-chunks script; one side also reads
`run.events()` to its end in a task beside `result()`. Timed from the published run to the
settled result (and, when consumed, the last event read).
"""

from __future__ import annotations

import time

import anyio
from _context import PYTHON, BenchError, Context
from _report import Section, Target
from _timing import Subject, paired, ratios
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import EventsDropped, MessageChunk, SubagentProvider, SubagentRequest
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript

PIECE = "0123456789abcdef"


def _providers(ctx: Context, chunks: int) -> dict[str, SubagentProvider]:
    text = PIECE * chunks
    acp_script = ctx.write_json("events-acp.json", {"text": text, "chunks": chunks})
    sdk_script = FakeScript(text=text, deltas=chunks, final_message=False)
    # A file, not `--json`: one argv word is limited to 128 KiB on Linux.
    sdk_path = ctx.work / "events-sdk.json"
    sdk_path.write_text(sdk_script.to_json(), "utf-8")
    return {
        "ACP": ACPProvider(
            ACPConfig(command=PYTHON, args=["-m", "subagent_acp.testing", "--script", acp_script])
        ),
        "SDK": SDKProvider(
            SDKConfig(
                command=PYTHON, args=["-m", "subagent_sdk.testing", "--script", str(sdk_path)]
            )
        ),
    }


def stream_subject(
    ctx: Context, provider: SubagentProvider, expected: str, *, consume: bool, seen: list[int]
) -> Subject:
    async def subject() -> float:
        run = await provider.start(SubagentRequest(prompt="bench", cwd=ctx.work))
        count = 0
        text: list[str] = []
        dropped: list[int] = []
        result = None

        async def read_events() -> None:
            nonlocal count
            async for event in run.events():
                count += 1
                if isinstance(event, MessageChunk):
                    text.append(event.text)
                elif isinstance(event, EventsDropped):
                    dropped.append(event.count)

        async with run:
            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                if consume:
                    group.start_soon(read_events)
                result = await run.result()
            elapsed = time.perf_counter() - started
        if result is None or result.stop_reason != "completed" or result.output != expected:
            raise BenchError(f"{provider.name} streaming run did not complete")
        if consume:
            if not dropped and "".join(text) != expected:
                raise BenchError(f"{provider.name}: the events' text differs from the output")
            seen.append(count)
        return elapsed

    return subject


async def events(ctx: Context) -> list[Section]:
    chunks = ctx.reps(10_000, 2_000)
    section = Section(
        "Streaming with events consumed vs not consumed",
        notes=[
            f"{chunks:,} message chunks of {len(PIECE)} characters from the fake child "
            "(ACP `agent_message_chunk`, SDK text deltas). Consumed: a task reads "
            "`run.events()` to its end beside `result()`; not consumed: nobody reads them "
            "(the bounded buffer drops the oldest). Ratio: consumed rate / not-consumed rate, "
            "pair by pair; the result must be the same either way.",
        ],
    )
    expected = PIECE * chunks
    for kind, provider in _providers(ctx, chunks).items():
        seen: list[int] = []
        samples = await paired(
            {
                "consumed": stream_subject(ctx, provider, expected, consume=True, seen=seen),
                "ignored": stream_subject(ctx, provider, expected, consume=False, seen=seen),
            },
            warmup=1,
            repeat=ctx.reps(7, 2),
        )
        section.add(f"{kind}, events consumed", samples["consumed"].inverted(chunks), "chunks/s")
        section.add(f"{kind}, events not consumed", samples["ignored"].inverted(chunks), "chunks/s")
        section.add(
            f"{kind} events consumed / not consumed",
            ratios(samples["ignored"], samples["consumed"]),
            "×",
            Target(">=", 0.9),
        )
        if min(seen) < 1:
            raise BenchError(f"{kind}: the consumer saw no events")
    return [section]
