"""Pre-spawned children (`prewarm`, issue 20 item 1): what a warm child saves.

- Time to first update of an ACP run on a warm child (`prewarm=1`, pool refilled before the
  clock) vs the floor of a child already up and initialized, driven by a raw `acp` SDK client
  (only `session/new`, the prompt and the first update timed; its child, like the pool's, is
  brought up ahead and waits idle through the round); the cold provider beside both.
- `start()` of a run on the `harness acp-agent` child, warm vs cold, and the same for the fake
  SDK runtime.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from _acp_raw import RawFirstUpdate
from _context import PYTHON, BenchError, Context
from _report import Section, Target
from _timing import Subject, paired, ratios
from case_harness import harness_path
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import CancelSignal, MessageChunk, SubagentRequest
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript

TEXT = "first words"


def _fake_acp(ctx: Context, prewarm: int) -> ACPProvider:
    script = ctx.write_json("prewarm-acp.json", {"text": TEXT})
    return ACPProvider(
        ACPConfig(
            command=PYTHON,
            args=["-m", "subagent_acp.testing", "--script", script],
            cwd=ctx.work,
            prewarm=prewarm,
        )
    )


def first_update(ctx: Context, provider: ACPProvider) -> Subject:
    """`start()` -> the first `MessageChunk` of the run; the pool is full and the request built
    before the clock (the floor's inputs are ready before its clock too)."""

    async def subject() -> float:
        await provider.warm_up()
        request = SubagentRequest(prompt="bench", cwd=ctx.work)
        started = time.perf_counter()
        run = await provider.start(request)
        async with run:
            elapsed: float | None = None
            async for event in run.events():
                if isinstance(event, MessageChunk):
                    elapsed = time.perf_counter() - started
                    break
            result = await run.result()
        if elapsed is None or result.stop_reason != "completed" or result.output != TEXT:
            raise BenchError(f"ACP first-update run ended {result.stop_reason}")
        return elapsed

    return subject


def raw_floor(ctx: Context) -> RawFirstUpdate:
    script = ctx.write_json("prewarm-acp.json", {"text": TEXT})
    return RawFirstUpdate([PYTHON, "-m", "subagent_acp.testing", "--script", script], str(ctx.work))


def start_only(ctx: Context, provider: ACPProvider | SDKProvider) -> Subject:
    """`start()` to the published run (the pool full before the clock); then cancelled."""

    async def subject() -> float:
        await provider.warm_up()
        cancel = CancelSignal()
        started = time.perf_counter()
        run = await provider.start(SubagentRequest(prompt="bench", cwd=ctx.work, cancel=cancel))
        elapsed = time.perf_counter() - started
        cancel.cancel()
        await run.dispose()
        return elapsed

    return subject


def _acp_agent(ctx: Context, prewarm: int) -> ACPProvider:
    state = ctx.work / "acp-agent-state"
    state.mkdir(exist_ok=True)
    env: Mapping[str, str] = {
        # Never contacted before the run is published; the prompt is cancelled at once.
        "DEEPSEEK_API_KEY": "bench-unused",
        "DEEPSEEK_BASE_URL": "http://127.0.0.1:9/v1",
        "HARNESS_STATE_DIR": str(state),
    }
    return ACPProvider(
        ACPConfig(
            command=harness_path(), args=["acp-agent"], env=env, cwd=ctx.work, prewarm=prewarm
        )
    )


def _fake_sdk(ctx: Context, prewarm: int) -> SDKProvider:
    script = FakeScript(text=TEXT)
    return SDKProvider(
        SDKConfig(
            command=PYTHON,
            args=["-m", "subagent_sdk.testing", "--json", script.to_json()],
            cwd=ctx.work,
            prewarm=prewarm,
        )
    )


async def prewarm(ctx: Context) -> list[Section]:
    ttfu = Section(
        "Time to first update: warm ACP child vs a child already up",
        notes=[
            "Warm: `ACPConfig(prewarm=1)`, `await provider.warm_up()` before the clock, then "
            "`start()` -> first `MessageChunk` from `run.events()`. Floor: the same fake "
            "child spawned and past `initialize` before the clock, driven by a raw `acp` SDK "
            "client (`session/new`, prompt, first `session/update`); it is brought up right "
            "after the previous floor measurement and waits idle through the round, as the "
            "pool's child does. Cold: `prewarm=0`.",
        ],
    )
    warm_acp, cold_acp = _fake_acp(ctx, 1), _fake_acp(ctx, 0)
    floor = raw_floor(ctx)
    async with warm_acp:
        try:
            samples = await paired(
                {
                    "warm": first_update(ctx, warm_acp),
                    "cold": first_update(ctx, cold_acp),
                    "floor": floor,
                },
                warmup=1,
                repeat=ctx.reps(12, 3),
            )
        finally:
            await floor.aclose()
    ttfu.add("warm child, start -> first update", samples["warm"].scaled(1000), "ms")
    ttfu.add("cold child, start -> first update", samples["cold"].scaled(1000), "ms")
    ttfu.add("floor: child already up, raw client", samples["floor"].scaled(1000), "ms")
    ttfu.add(
        "first update, warm / child already up",
        ratios(samples["warm"], samples["floor"]),
        "×",
        Target("<=", 1.5),
    )
    ttfu.add("first update, warm / cold", ratios(samples["warm"], samples["cold"]), "×")

    start = Section(
        "Start of a run: warm vs cold child",
        notes=[
            "`start()` until the run is published (spawn, `initialize`, session), with "
            "`prewarm=1` (pool full before the clock) vs `prewarm=0`; the run is then "
            "cancelled and disposed, untimed. `harness acp-agent` gets a placeholder key and "
            "an unreachable model URL (the model is never asked before the cancel) and a "
            "scratch state directory.",
        ],
    )
    warm_agent, cold_agent = _acp_agent(ctx, 1), _acp_agent(ctx, 0)
    warm_sdk, cold_sdk = _fake_sdk(ctx, 1), _fake_sdk(ctx, 0)
    async with warm_agent, warm_sdk:
        agent = await paired(
            {"warm": start_only(ctx, warm_agent), "cold": start_only(ctx, cold_agent)},
            warmup=1,
            repeat=ctx.reps(6, 2),
        )
        sdk = await paired(
            {"warm": start_only(ctx, warm_sdk), "cold": start_only(ctx, cold_sdk)},
            warmup=1,
            repeat=ctx.reps(10, 3),
        )
    start.add("harness acp-agent, warm start", agent["warm"].scaled(1000), "ms")
    start.add("harness acp-agent, cold start", agent["cold"].scaled(1000), "ms")
    start.add("harness acp-agent start, warm / cold", ratios(agent["warm"], agent["cold"]), "×")
    start.add("fake SDK runtime, warm start", sdk["warm"].scaled(1000), "ms")
    start.add("fake SDK runtime, cold start", sdk["cold"].scaled(1000), "ms")
    start.add("fake SDK runtime start, warm / cold", ratios(sdk["warm"], sdk["cold"]), "×")
    return [ttfu, start]
