"""RayPlacement on a local 3-node cluster, beside the same child on this host (report only).

    RAY_ENABLE_UV_RUN_RUNTIME_ENV=0 uv run python bench/case_ray.py [--quick]

Not part of `run.py` (the cluster costs ~1.5 GB and tens of seconds to start). Prints:
- first update: spawn `cat`, send a line, read it back, through a warm node host / locally
  (target ≤ 1.2×; interleaved rounds, median of per-round ratios);
- line round trip through the relay once the child runs (median, ms);
- relay throughput of a stdout flood / the same flood through a local pipe;
- fan-out of N = 1…256 `cat` children across two nodes: parent RSS per in-flight run and the
  host workers (Ray workers running `NodeHost`) per node.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack

import anyio
import psutil
from subagent_core import Placement
from subagent_core.kit import ChildCommand, open_managed_process
from subagent_ray import RayPlacement
from subagent_ray.testing import host_workers, local_cluster

NODES = {"node_a": {"node_a": 1.0}, "node_b": {"node_b": 1.0}}


async def _read_line(proc: object) -> None:
    stdout = proc.stdout  # type: ignore[attr-defined]
    data = b""
    while not data.endswith(b"\n"):
        data += await stdout.receive()


async def first_update(remote: Placement | None) -> float:
    started = time.perf_counter()
    async with open_managed_process(ChildCommand(command="cat", remote=remote)) as proc:
        assert proc.stdin is not None
        await proc.stdin.send(b"hello\n")
        await _read_line(proc)
        elapsed = time.perf_counter() - started
    return elapsed


async def round_trips(remote: Placement, count: int) -> float:
    times: list[float] = []
    async with open_managed_process(ChildCommand(command="cat", remote=remote)) as proc:
        assert proc.stdin is not None
        for _ in range(count):
            started = time.perf_counter()
            await proc.stdin.send(b"ping\n")
            await _read_line(proc)
            times.append(time.perf_counter() - started)
    return statistics.median(times)


async def flood(remote: Placement | None, total: int) -> float:
    command = ChildCommand(command="head", args=("-c", str(total), "/dev/zero"), remote=remote)
    started = time.perf_counter()
    received = 0
    async with open_managed_process(command, stdin="devnull") as proc:
        assert proc.stdout is not None
        try:
            while True:
                received += len(await proc.stdout.receive(1 << 20))
        except anyio.EndOfStream:
            pass
    assert received == total
    return total / (time.perf_counter() - started) / 2**20


async def fanout(placements: list[RayPlacement], n: int) -> tuple[float, int]:
    me = psutil.Process()
    before = me.memory_info().rss
    async with AsyncExitStack() as stack:

        async def one(index: int) -> None:
            command = ChildCommand(command="cat", remote=placements[index % len(placements)])
            await stack.enter_async_context(open_managed_process(command))

        async with anyio.create_task_group() as group:
            for index in range(n):
                group.start_soon(one, index)
        per_run = (me.memory_info().rss - before) / n / 1024
        workers = len(host_workers())
    return per_run, workers


async def paired(
    a: Callable[[], Awaitable[float]], b: Callable[[], Awaitable[float]], rounds: int
) -> float:
    ratios = [await a() / await b() for _ in range(rounds)]
    return statistics.median(ratios)


async def main(address: str, quick: bool) -> None:
    a = RayPlacement(address=address, resources={"node_a": 0.001})
    b = RayPlacement(address=address, resources={"node_b": 0.001})
    await first_update(a)  # connect and warm the host
    rounds = 3 if quick else 15
    ratio = await paired(lambda: first_update(a), lambda: first_update(None), rounds)
    print(f"first update, warm node host / local: {ratio:.2f}× (target ≤ 1.2×)")
    print(
        f"line round trip through the relay: {await round_trips(a, 20 if quick else 200) * 1e3:.2f} ms"
    )
    size = (64 if quick else 512) << 20
    remote_rate, local_rate = await flood(a, size), await flood(None, size)
    print(
        f"relay throughput {remote_rate:.0f} MiB/s / local pipe {local_rate:.0f} MiB/s "
        f"= {remote_rate / local_rate:.2f}"
    )
    for n in (1, 4, 16, 64) if quick else (1, 4, 16, 64, 128, 256):
        per_run, workers = await fanout([a, b], n)
        print(
            f"fan-out N={n}: parent RSS {per_run:.0f} KiB per in-flight run, {workers} host workers (3 nodes)"
        )


if __name__ == "__main__":
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    with local_cluster(NODES) as cluster:
        anyio.run(main, cluster.address, "--quick" in sys.argv, backend="asyncio")
