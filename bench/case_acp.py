"""ACP: run overhead and streaming, `ACPProvider` against a raw `acp` SDK client.

Both sides drive the same fake child (`python -m subagent_acp.testing`) with the same script.
"""

from __future__ import annotations

import time
from pathlib import Path

from _acp_raw import raw_run
from _context import BENCH, PYTHON, BenchError, Context
from _report import Section, Target
from _timing import Subject, paired, process_subject, ratios
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import SubagentRequest

SMALL_CHUNKS = 20_000
SMALL_CHUNK_TEXT = "0123456789abcdef"
HUGE_CHUNK_BYTES = 5_000_000


def _child_argv(script: str) -> list[str]:
    return [PYTHON, "-m", "subagent_acp.testing", "--script", script]


def _provider(script: str) -> ACPProvider:
    return ACPProvider(
        ACPConfig(command=PYTHON, args=["-m", "subagent_acp.testing", "--script", script])
    )


def provider_whole(script: str, cwd: Path, expected: str) -> Subject:
    """start -> result -> dispose, timed whole."""
    provider = _provider(script)

    async def subject() -> float:
        started = time.perf_counter()
        run = await provider.start(SubagentRequest(prompt="bench", cwd=cwd))
        async with run:
            result = await run.result()
        elapsed = time.perf_counter() - started
        if result.stop_reason != "completed" or result.output != expected:
            raise BenchError(f"ACPProvider run ended {result.stop_reason}")
        return elapsed

    return subject


def provider_prompt(script: str, cwd: Path, expected_len: int) -> Subject:
    """From publication (the prompt is sent) to the settled result: the streaming phase."""
    provider = _provider(script)

    async def subject() -> float:
        run = await provider.start(SubagentRequest(prompt="bench", cwd=cwd))
        async with run:
            started = time.perf_counter()
            result = await run.result()
            elapsed = time.perf_counter() - started
        if result.stop_reason != "completed" or len(result.output) != expected_len:
            raise BenchError(f"ACPProvider streaming run ended {result.stop_reason}")
        return elapsed

    return subject


def raw_whole(script: str, cwd: Path, expected: str) -> Subject:
    async def subject() -> float:
        started = time.perf_counter()
        run = await raw_run(_child_argv(script), str(cwd))
        elapsed = time.perf_counter() - started
        if run.stop_reason != "end_turn" or run.output != expected:
            raise BenchError(f"raw ACP run ended {run.stop_reason}")
        return elapsed

    return subject


def raw_prompt(script: str, cwd: Path, expected_len: int) -> Subject:
    async def subject() -> float:
        run = await raw_run(_child_argv(script), str(cwd))
        if run.stop_reason != "end_turn" or len(run.output) != expected_len:
            raise BenchError(f"raw ACP streaming run ended {run.stop_reason}")
        return run.prompt_seconds

    return subject


async def run_overhead(ctx: Context) -> list[Section]:
    text = "Hello from the fake ACP child."
    script = ctx.write_json("acp-hello.json", {"text": text})
    warm = Section(
        "ACP run overhead, warm (in-process, `acp` already imported)",
        notes=[
            "One whole run: spawn the fake child, initialize, session/new, one prompt, "
            "settle, dispose (tree gone). Same fake child and script on both sides.",
            "Baseline: a minimal client on the `acp` SDK's `ClientSideConnection` over "
            "asyncio pipes (close stdin, wait for exit).",
        ],
    )
    samples = await paired(
        {
            "provider": provider_whole(script, ctx.work, text),
            "raw": raw_whole(script, ctx.work, text),
        },
        warmup=ctx.reps(3, 1),
        repeat=ctx.reps(20, 5),
    )
    warm.add("ACPProvider run", samples["provider"].scaled(1000), "ms")
    warm.add("raw acp SDK client run", samples["raw"].scaled(1000), "ms")
    warm.add(
        "ACPProvider / raw SDK",
        ratios(samples["provider"], samples["raw"]),
        "×",
        Target("<=", 1.15),
    )

    cold = Section(
        "ACP run overhead, cold (one fresh interpreter per run) vs the floor",
        notes=[
            "`python bench/_acp_oneshot.py provider|raw`: interpreter start, imports, one "
            'whole run, exit. Floor: `python -c "import acp"` (no run at all).',
        ],
    )
    oneshot = str(BENCH / "_acp_oneshot.py")
    cold_samples = await paired(
        {
            "provider": process_subject([PYTHON, oneshot, "provider", script, str(ctx.work)]),
            "raw": process_subject([PYTHON, oneshot, "raw", script, str(ctx.work)]),
            "floor": process_subject([PYTHON, "-c", "import acp"]),
        },
        warmup=0,  # the warm case above already pulled every file into the page cache
        repeat=ctx.reps(3, 1),
    )
    cold.add("ACPProvider one-shot process", cold_samples["provider"].scaled(1000), "ms")
    cold.add("raw acp SDK one-shot process", cold_samples["raw"].scaled(1000), "ms")
    cold.add('floor: python -c "import acp"', cold_samples["floor"].scaled(1000), "ms")
    cold.add(
        "ACPProvider / raw SDK (cold)",
        ratios(cold_samples["provider"], cold_samples["raw"]),
        "×",
    )
    cold.add("ACPProvider / floor", ratios(cold_samples["provider"], cold_samples["floor"]), "×")
    cold.add("raw SDK / floor", ratios(cold_samples["raw"], cold_samples["floor"]), "×")
    return [warm, cold]


async def streaming(ctx: Context) -> list[Section]:
    section = Section(
        "ACP streaming",
        notes=[
            f"{SMALL_CHUNKS:,} `agent_message_chunk` updates of {len(SMALL_CHUNK_TEXT)} "
            f"characters, and one chunk of {HUGE_CHUNK_BYTES:,} bytes, from the fake child.",
            "Timed over the prompt phase (prompt sent -> answer received, all text "
            "collected); rates are per second of that phase. Ratio = provider rate / raw rate "
            "(pair by pair).",
        ],
    )
    small_text = SMALL_CHUNK_TEXT * SMALL_CHUNKS
    small = ctx.write_json("acp-small.json", {"text": small_text, "chunks": SMALL_CHUNKS})
    huge = ctx.write_json("acp-huge.json", {"huge_chunk_bytes": HUGE_CHUNK_BYTES})
    reps = ctx.reps(7, 2)
    s = await paired(
        {
            "provider": provider_prompt(small, ctx.work, len(small_text)),
            "raw": raw_prompt(small, ctx.work, len(small_text)),
        },
        warmup=1,
        repeat=reps,
    )
    section.add("ACPProvider, small chunks", s["provider"].inverted(SMALL_CHUNKS), "chunks/s")
    section.add("raw acp SDK, small chunks", s["raw"].inverted(SMALL_CHUNKS), "chunks/s")
    section.add(
        "ACPProvider / raw SDK, small chunks",
        ratios(s["raw"], s["provider"]),
        "×",
        Target(">=", 0.9),
    )
    h = await paired(
        {
            "provider": provider_prompt(huge, ctx.work, HUGE_CHUNK_BYTES),
            "raw": raw_prompt(huge, ctx.work, HUGE_CHUNK_BYTES),
        },
        warmup=1,
        repeat=reps,
    )
    mb = HUGE_CHUNK_BYTES / 1e6
    section.add("ACPProvider, one 5 MB chunk", h["provider"].inverted(mb), "MB/s")
    section.add("raw acp SDK, one 5 MB chunk", h["raw"].inverted(mb), "MB/s")
    section.add(
        "ACPProvider / raw SDK, 5 MB chunk",
        ratios(h["raw"], h["provider"]),
        "×",
        Target(">=", 0.9),
    )
    return [section]
