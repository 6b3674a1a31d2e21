"""A quiet run beside 4 children flooding tiny garbage lines (issue 12: fair readers).

Each round starts 4 flooder runs (the fake child behind `_garbage_wrap.py`, which floods `not
json` lines between its frames and hangs in its prompt), then times the quiet sibling, then ends
the flooders. The same quiet subject alone, in the same interleaved rounds, is the baseline.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from _context import BENCH, PYTHON, BenchError, Context, wait_for_file
from _report import Section, Target
from _timing import Subject, paired, ratios
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import CancelSignal, SubagentProvider, SubagentRequest, SubagentRun
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript

FLOODERS = 4
WRAP = str(BENCH / "_garbage_wrap.py")
TEXT = "quiet sibling"


def _acp(script: dict[str, object], *, gate: Path | None = None) -> ACPProvider:
    argv = [PYTHON, "-m", "subagent_acp.testing", "--script-json", json.dumps(script)]
    if gate is not None:
        argv = [PYTHON, WRAP, str(gate), *argv]
    return ACPProvider(ACPConfig(command=argv[0], args=argv[1:]))


def _sdk(script: FakeScript, *, gate: Path | None = None) -> SDKProvider:
    argv = [PYTHON, "-m", "subagent_sdk.testing", "--json", script.to_json()]
    if gate is not None:
        argv = [PYTHON, WRAP, str(gate), *argv]
    return SDKProvider(SDKConfig(command=argv[0], args=argv[1:]))


def _flooder(kind: str, gate: Path) -> SubagentProvider:
    if kind == "ACP":
        return _acp({"hang_at": "prompt"}, gate=gate)
    return _sdk(FakeScript(hang_at="prompt"), gate=gate)


def _announced(gate: Path, *, remove: bool = False) -> int:
    """How many flooders touched `GATE.<pid>` (they flood); `remove` clears them first."""
    found = list(gate.parent.glob(f"{gate.name}.*"))
    if remove:
        for path in found:
            path.unlink()
        return 0
    return len(found)


@asynccontextmanager
async def _flooding(kind: str, cwd: Path, on: bool) -> AsyncGenerator[None]:
    """4 flooder runs in their prompt, flooding once all are started; the flood stops before
    they are cancelled and disposed."""
    if not on:
        yield
        return
    gate = cwd / f"flood-{kind}"
    _announced(gate, remove=True)
    provider = _flooder(kind, gate)
    cancel = CancelSignal()
    runs: list[SubagentRun] = []

    async def start_one() -> None:
        runs.append(await provider.start(SubagentRequest(prompt="flood", cwd=cwd, cancel=cancel)))

    try:
        async with anyio.create_task_group() as group:
            for _ in range(FLOODERS):
                group.start_soon(start_one)
        gate.touch()
        with anyio.fail_after(30):
            while _announced(gate) < FLOODERS:  # noqa: ASYNC110 (a bench may poll)
                await anyio.sleep(0.002)
        yield
    finally:
        gate.unlink(missing_ok=True)
        cancel.cancel()
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for run in runs:
                    group.start_soon(run.dispose)


def _quiet(kind: str, marker: Path | None) -> SubagentProvider:
    if kind == "ACP":
        script: dict[str, object] = {"text": TEXT}
        if marker is not None:
            script = {"hang_at": "prompt", "markers": [{"path": str(marker), "at": "prompt"}]}
        return _acp(script)
    if marker is not None:
        return _sdk(FakeScript(hang_at="prompt", ready_file=str(marker)))
    return _sdk(FakeScript(text=TEXT))


def start_subject(ctx: Context, kind: str, *, flood: bool) -> Subject:
    """`start()` of the quiet run (spawn, handshake, published), then its result untimed."""
    provider = _quiet(kind, None)

    async def subject() -> float:
        async with _flooding(kind, ctx.work, flood):
            started = time.perf_counter()
            run = await provider.start(SubagentRequest(prompt="bench", cwd=ctx.work))
            elapsed = time.perf_counter() - started
            async with run:
                result = await run.result()
        if result.stop_reason != "completed" or result.output != TEXT:
            raise BenchError(f"{kind} quiet run ended {result.stop_reason}")
        return elapsed

    return subject


def cancel_subject(ctx: Context, kind: str, *, flood: bool) -> Subject:
    """From `cancel()` of the quiet run, hanging in its prompt, to its settled result."""

    async def subject() -> float:
        marker = ctx.work / f"quiet-{kind}.ready"
        marker.unlink(missing_ok=True)
        provider = _quiet(kind, marker)
        cancel = CancelSignal()
        async with _flooding(kind, ctx.work, flood):
            run = await provider.start(SubagentRequest(prompt="bench", cwd=ctx.work, cancel=cancel))
            async with run:
                await wait_for_file(marker)
                started = time.perf_counter()
                cancel.cancel()
                result = await run.result()
                elapsed = time.perf_counter() - started
        if result.stop_reason != "aborted":
            raise BenchError(f"{kind} cancelled quiet run ended {result.stop_reason}")
        return elapsed

    return subject


def _both(ctx: Context, kind: str, build: Callable[..., Subject]) -> dict[str, Subject]:
    return {"beside": build(ctx, kind, flood=True), "alone": build(ctx, kind, flood=False)}


async def quiet_sibling(ctx: Context) -> list[Section]:
    section = Section(
        "A quiet run beside 4 flooding children",
        notes=[
            f"Flooders: {FLOODERS} runs of the same provider whose child is the fake child "
            "behind `bench/_garbage_wrap.py` (tiny `not json` lines as fast as the parent "
            "reads them, between whole frames), started and flooding before the clock starts.",
            "Start: `provider.start()` of a quiet fake child (spawn, handshake, published). "
            "Cancel: `cancel()` of a quiet run hanging in its prompt -> `result()` returned. "
            "Ratio: beside the flooders / alone, pair by pair in the same rounds.",
        ],
    )
    for kind in ("ACP", "SDK"):
        starts = await paired(_both(ctx, kind, start_subject), warmup=1, repeat=ctx.reps(4, 2))
        section.add(f"{kind} quiet start, alone", starts["alone"].scaled(1000), "ms")
        section.add(f"{kind} quiet start, beside flooders", starts["beside"].scaled(1000), "ms")
        section.add(
            f"{kind} quiet start beside flooders / alone",
            ratios(starts["beside"], starts["alone"]),
            "×",
            Target("<=", 2.0),
        )
        cancels = await paired(_both(ctx, kind, cancel_subject), warmup=1, repeat=ctx.reps(4, 2))
        section.add(f"{kind} cancel->settled, alone", cancels["alone"].scaled(1000), "ms")
        section.add(
            f"{kind} cancel->settled, beside flooders",
            cancels["beside"].scaled(1000),
            "ms",
            Target("<", 100, "ms"),
        )
        section.add(
            f"{kind} cancel->settled beside flooders / alone",
            ratios(cancels["beside"], cancels["alone"]),
            "×",
        )
    return [section]
