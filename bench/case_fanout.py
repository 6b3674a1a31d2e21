"""Fan-out (issue 20 item 4): N concurrent ACP runs and N concurrent SDK runs on the fake children.

For each N, one batch: N `start()`s at once; every child holds its prompt on a gate file, so
all N are in flight together; then this process's RSS and open fds are read, the gate opens,
every result is awaited and every run disposed. Figures per run: the batch's wall time / N,
(RSS in flight − RSS before the batch) / N, (fds in flight − fds before) / N, and the Python
heap held in flight / N (`tracemalloc`, warm-up batch only). The sizes run in the same
interleaved rounds, so wall time per run at N / at N = 1 is a same-run ratio.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import anyio
import psutil
from _context import PYTHON, BenchError, Context, live_descendants
from _report import Section
from _svg import Panel, Series, panels
from _timing import Sample, Subject, paired, ratios
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import SubagentProvider, SubagentRequest, SubagentRun
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript

SIZES = (1, 8, 32, 128)
QUICK_SIZES = (1, 4, 16)
TEXT = "fan-out"
PLOT = "fanout.svg"


def _open_fds(process: psutil.Process) -> int:
    """The process's open file descriptors (its handles on Windows, which has no fds)."""
    if sys.platform == "win32":
        return process.num_handles()
    return process.num_fds()


def _acp(gate: Path) -> SubagentProvider:
    script = {"text": TEXT, "gate_file": str(gate)}
    return ACPProvider(
        ACPConfig(
            command=PYTHON, args=["-m", "subagent_acp.testing", "--script-json", json.dumps(script)]
        )
    )


def _sdk(gate: Path) -> SubagentProvider:
    script = FakeScript(text=TEXT, hang_at="prompt", go_file=str(gate))
    return SDKProvider(
        SDKConfig(command=PYTHON, args=["-m", "subagent_sdk.testing", "--json", script.to_json()])
    )


class Batch:
    """One size: a subject, and the memory and fd figures its batches found."""

    def __init__(
        self, ctx: Context, kind: str, size: int, build: Callable[[Path], SubagentProvider]
    ):
        self.rss: list[float] = []
        self.fds: list[float] = []
        self.heap: list[float] = []
        self._ctx, self._kind, self._size, self._build = ctx, kind, size, build
        self._rounds = itertools.count()

    async def subject(self) -> float:
        ctx, size = self._ctx, self._size
        round_index = next(self._rounds)
        gate = ctx.work / f"fanout-{self._kind}-{size}-{round_index}.go"
        traced = round_index == 0  # the warm-up batch, whose time is discarded anyway
        provider = self._build(gate)
        me = psutil.Process()
        rss_before, fds_before = me.memory_info().rss, _open_fds(me)
        if traced:
            tracemalloc.start()
        runs: list[SubagentRun] = []
        outputs: list[str] = []

        async def start_one() -> None:
            runs.append(await provider.start(SubagentRequest(prompt="bench", cwd=ctx.work)))

        async def finish(run: SubagentRun) -> None:
            async with run:
                outputs.append((await run.result()).output)

        started = time.perf_counter()
        try:
            async with anyio.create_task_group() as group:
                for _ in range(size):
                    group.start_soon(start_one)
            self.rss.append((me.memory_info().rss - rss_before) / size / 1024)
            self.fds.append((_open_fds(me) - fds_before) / size)
            if traced:
                self.heap.append(tracemalloc.get_traced_memory()[0] / size / 1024)
                tracemalloc.stop()
            gate.touch()
            async with anyio.create_task_group() as group:
                for run in runs:
                    group.start_soon(finish, run)
            elapsed = time.perf_counter() - started
        finally:
            if tracemalloc.is_tracing():
                tracemalloc.stop()
            gate.touch()
            with anyio.CancelScope(shield=True):
                for run in runs:
                    await run.dispose()
        if outputs != [TEXT] * size:
            raise BenchError(f"{self._kind} fan-out of {size}: a run did not complete")
        if live_descendants():
            raise BenchError(f"{self._kind} fan-out of {size}: processes left after dispose")
        return elapsed / size


def _points(samples: list[tuple[int, Sample]]) -> list[tuple[float, float, float, float]]:
    return [(float(n), s.median, s.low, s.high) for n, s in samples]


async def fanout(ctx: Context) -> list[Section]:
    sizes = QUICK_SIZES if ctx.quick else SIZES
    section = Section(
        "Fan-out: N concurrent runs on the fake children",
        notes=[
            f"N = {', '.join(map(str, sizes))}; each child holds its prompt on a gate file "
            "until all N runs are started, so all are in flight together. Per run: batch wall "
            "time (start of the first `start()` to the last result) / N; parent RSS growth "
            "while all are in flight / N; parent open fds while all are in flight / N. "
            "Ratios: wall per run at N / at N = 1, pair by pair in the same rounds.",
            "RSS growth is measured after a warm-up batch of every size, so memory the "
            "allocator freed after earlier batches is reused: it is the new memory N in-flight "
            "runs need (near 0 means the runs fit in memory returned by the previous ones). "
            "Python heap per run: `tracemalloc`'s traced memory while all N are in flight / N, "
            "taken in the warm-up batch of each size (tracing slows allocation, and that "
            "batch's time is discarded), so n = 1: what each in-flight run holds, reused "
            "memory or not.",
            f"Plot: [`{PLOT}`]({PLOT}) (median, bars min–max).",
        ],
    )
    wall: dict[str, list[tuple[int, Sample]]] = {}
    rss: dict[str, list[tuple[int, Sample]]] = {}
    fds: dict[str, list[tuple[int, Sample]]] = {}
    heaps: dict[str, list[tuple[int, Sample]]] = {}
    for kind, build in (("ACP", _acp), ("SDK", _sdk)):
        batches = {n: Batch(ctx, kind, n, build) for n in sizes}
        subjects: dict[str, Subject] = {f"N={n}": b.subject for n, b in batches.items()}
        samples = await paired(subjects, warmup=1, repeat=ctx.reps(2, 1))
        one = samples[f"N={sizes[0]}"]
        wall[kind], rss[kind], fds[kind], heaps[kind] = [], [], [], []
        for n, batch in batches.items():
            per_run = samples[f"N={n}"]
            memory = Sample(tuple(batch.rss[1:] or batch.rss))  # the warm-up batch left out
            handles = Sample(tuple(batch.fds[1:] or batch.fds))
            heap = Sample(tuple(batch.heap))
            wall[kind].append((n, per_run.scaled(1000)))
            rss[kind].append((n, memory))
            fds[kind].append((n, handles))
            heaps[kind].append((n, heap))
            section.add(f"{kind} N={n}: wall time per run", per_run.scaled(1000), "ms")
            section.add(f"{kind} N={n}: parent RSS growth per in-flight run", memory, "KiB")
            section.add(f"{kind} N={n}: parent fds per in-flight run", handles, "fds")
            section.add(f"{kind} N={n}: Python heap per in-flight run", heap, "KiB")
            if n != sizes[0]:
                section.add(
                    f"{kind} N={n}: wall per run / at N={sizes[0]}", ratios(per_run, one), "×"
                )
    kinds = list(wall)
    ctx.figures[PLOT] = panels(
        "Fan-out: N concurrent runs on the fake children",
        [
            Panel("wall time per run", "ms", [Series(k, _points(wall[k])) for k in kinds]),
            Panel("parent RSS growth per run", "KiB", [Series(k, _points(rss[k])) for k in kinds]),
            Panel("Python heap per run", "KiB", [Series(k, _points(heaps[k])) for k in kinds]),
            Panel("parent fds per run", "fds", [Series(k, _points(fds[k])) for k in kinds]),
        ],
        [float(n) for n in sizes],
    )
    return [section]
