"""Sessions (issue 38): what keeping a child, or resuming one, saves over a fresh run.

On the fake Codex app-server (the one provider whose fake keeps a resumable thread), every
figure is start → the turn's first `MessageChunk`:

- the second turn of a live session (the first turn done before the clock) vs a fresh run
  (spawn, handshake, thread, turn) — target ≤ 0.3×;
- a cold resume by handle (a fresh child, `thread/resume`, the turn; the session made and
  closed before the clock) vs the fresh run — target ≤ 1.2×;
- parent RSS per live session, N sessions open at once, each after one turn.
"""

from __future__ import annotations

import json
import time

import psutil
from _context import PYTHON, BenchError, Context
from _report import Section, Target
from _timing import Sample, Subject, paired, ratios
from subagent_codex import CodexConfig, CodexProvider
from subagent_codex.testing import SCENARIO_ENV
from subagent_core import (
    MessageChunk,
    SessionRequest,
    SubagentRegistry,
    SubagentRequest,
    SubagentRun,
)

TEXT = "first words"
_TURN = [
    {"delta": TEXT},
    {"message": TEXT, "phase": "final_answer"},
    {"complete": "completed"},
]


def _registry(ctx: Context) -> SubagentRegistry:
    env = {SCENARIO_ENV: json.dumps({"turns": [_TURN]}), "CODEX_HOME": str(ctx.work / "codex")}
    config = CodexConfig(
        command=PYTHON, args=["-m", "subagent_codex.testing"], cwd=ctx.work, env=env
    )
    registry = SubagentRegistry()
    registry.register(CodexProvider(config))
    return registry


async def _first_update(run: SubagentRun, started: float) -> float:
    elapsed: float | None = None
    async for event in run.events():
        if isinstance(event, MessageChunk):
            elapsed = time.perf_counter() - started
            break
    result = await run.result()
    if elapsed is None or result.stop_reason != "completed":
        raise BenchError(f"a session turn ended {result.stop_reason}")
    return elapsed


def fresh(ctx: Context, registry: SubagentRegistry) -> Subject:
    async def subject() -> float:
        request = SubagentRequest(prompt="bench", cwd=ctx.work)
        started = time.perf_counter()
        async with await registry.start("codex", request) as run:
            return await _first_update(run, started)

    return subject


def second_turn(ctx: Context, registry: SubagentRegistry) -> Subject:
    async def subject() -> float:
        async with await registry.open_session("codex", SessionRequest(cwd=ctx.work)) as session:
            async with await session.run("one") as first:
                await first.result()
            started = time.perf_counter()
            async with await session.run("two") as run:
                return await _first_update(run, started)

    return subject


def cold_resume(ctx: Context, registry: SubagentRegistry) -> Subject:
    request = SessionRequest(cwd=ctx.work, state_dir=ctx.work / "sessions")

    async def subject() -> float:
        async with await registry.open_session("codex", request) as session:
            async with await session.run("one") as first:
                await first.result()
            handle = session.handle
        started = time.perf_counter()
        resumed = await registry.resume_session("codex", handle, request)
        async with resumed, await resumed.run("two") as run:
            return await _first_update(run, started)

    return subject


async def _rss_per_session(ctx: Context, registry: SubagentRegistry, count: int) -> float:
    """Parent RSS growth per live session (KiB), `count` sessions each after one turn."""
    me = psutil.Process()
    before = me.memory_info().rss
    sessions = [
        await registry.open_session("codex", SessionRequest(cwd=ctx.work)) for _ in range(count)
    ]
    try:
        for session in sessions:
            async with await session.run("one") as run:
                await run.result()
        grown = me.memory_info().rss - before
    finally:
        for session in sessions:
            await session.aclose()
    return grown / count / 1024


async def sessions(ctx: Context) -> list[Section]:
    registry = _registry(ctx)
    section = Section(
        "Sessions: a live second turn and a cold resume vs a fresh run",
        notes=[
            "The fake Codex app-server; each figure is start -> the turn's first "
            "`MessageChunk`. Second turn: `open_session`, turn 1 awaited before the clock, "
            "then `session.run()`. Cold resume: a session made, one turn, closed before the "
            "clock; then `resume_session(handle)` (a fresh child, `thread/resume`) and the "
            "turn. Fresh: `registry.start()` (spawn, handshake, `thread/start`, the turn).",
        ],
    )
    async with registry:
        samples = await paired(
            {
                "fresh": fresh(ctx, registry),
                "second": second_turn(ctx, registry),
                "resume": cold_resume(ctx, registry),
            },
            warmup=1,
            repeat=ctx.reps(12, 3),
        )
        rss = {n: await _rss_per_session(ctx, registry, n) for n in (1, 8, 32)}
    section.add("fresh run, start -> first update", samples["fresh"].scaled(1000), "ms")
    section.add("live second turn -> first update", samples["second"].scaled(1000), "ms")
    section.add("cold resume -> first update", samples["resume"].scaled(1000), "ms")
    section.add(
        "second turn / fresh run",
        ratios(samples["second"], samples["fresh"]),
        "×",
        Target("<=", 0.3),
    )
    section.add(
        "cold resume / fresh run",
        ratios(samples["resume"], samples["fresh"]),
        "×",
        Target("<=", 1.2),
    )
    for count, kib in rss.items():
        section.add(f"parent RSS per live session, N = {count}", Sample((kib,)), "KiB")
    return [section]
