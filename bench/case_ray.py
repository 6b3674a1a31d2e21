"""RayPlacement on a local 3-node cluster, beside the same child on this host.

    uv run python bench/run.py --only ray [--quick]

Last in the suite: the cluster costs ~1.5 GB and tens of seconds to start, and this process
stays its Ray driver until the case ends (the cluster is shut down then). Without `ray`
installed the case is skipped with the reason. Figures:
- first update: an ACP run on the fake ACP child, `start()` to its first message chunk,
  through a warm node host / the same child locally (target ≤ 1.2×; interleaved rounds, ratio
  pair by pair);
- first line: spawn `cat`, send a line, read it back (the placement's own cost, report);
- line round trip through the relay once the child runs (median of 50 per round, ms), and an
  empty call to the node host (the floor of every relayed request; median of 50, ms);
- relay throughput of a stdout flood / the same flood through a local pipe;
- fan-out of N = 1…256 `cat` children across two nodes, all in flight at once: parent RSS
  growth per in-flight run and host workers (Ray workers running `NodeHost`) per node.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
import psutil
from _context import PYTHON, BenchError, Context, live_descendants
from _report import Section, Target
from _timing import Sample, paired, ratios
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import MessageChunk, Placement, SubagentRequest
from subagent_core.kit import ChildCommand, ManagedProcess, open_managed_process

NODES = {"node_a": {"node_a": 1.0}, "node_b": {"node_b": 1.0}}
SIZES = (1, 4, 16, 64, 128, 256)
QUICK_SIZES = (1, 4, 16)
TEXT = "from the node"


async def _read_line(proc: ManagedProcess) -> None:
    assert proc.stdout is not None
    data = b""
    while not data.endswith(b"\n"):
        data += await proc.stdout.receive()


def _first_update(ctx: Context, remote: Placement | None) -> Callable[[], Awaitable[float]]:
    """`start()` -> the first `MessageChunk` of an ACP run on the fake child (dispose after)."""
    script = ctx.write_json("ray-acp.json", {"text": TEXT})
    provider = ACPProvider(
        ACPConfig(
            command=PYTHON,
            args=["-m", "subagent_acp.testing", "--script", script],
            cwd=ctx.work,
            remote=remote,
        )
    )

    async def subject() -> float:
        request = SubagentRequest(prompt="bench", cwd=ctx.work)
        started = time.perf_counter()
        elapsed: float | None = None
        async with await provider.start(request) as run:
            async for event in run.events():
                if isinstance(event, MessageChunk):
                    elapsed = time.perf_counter() - started
                    break
            result = await run.result()
        if elapsed is None or result.stop_reason != "completed":
            raise BenchError(f"ray first-update run ended {result.stop_reason}")
        return elapsed

    return subject


def _first_line(remote: Placement | None) -> Callable[[], Awaitable[float]]:
    async def subject() -> float:
        started = time.perf_counter()
        async with open_managed_process(ChildCommand(command="cat", remote=remote)) as proc:
            assert proc.stdin is not None
            await proc.stdin.send(b"hello\n")
            await _read_line(proc)
            elapsed = time.perf_counter() - started
        return elapsed

    return subject


def _round_trip(remote: Placement, count: int) -> Callable[[], Awaitable[float]]:
    async def subject() -> float:
        times: list[float] = []
        async with open_managed_process(ChildCommand(command="cat", remote=remote)) as proc:
            assert proc.stdin is not None
            for _ in range(count):
                started = time.perf_counter()
                await proc.stdin.send(b"ping\n")
                await _read_line(proc)
                times.append(time.perf_counter() - started)
        return statistics.median(times)

    return subject


def _empty_call(address: str, count: int) -> Callable[[], Awaitable[float]]:
    """Median of `count` empty calls to node_a's host: what any relayed request costs at least."""
    from subagent_ray._driver import host_for
    from subagent_ray._placement import DEFAULT_LEASE_SECONDS, DEFAULT_START_TIMEOUT_SECONDS

    async def subject() -> float:
        host = await host_for(
            None,
            {"node_a": 0.001},
            address=address,
            namespace=None,
            lease_seconds=DEFAULT_LEASE_SECONDS,
            start_timeout_seconds=DEFAULT_START_TIMEOUT_SECONDS,
        )
        times: list[float] = []
        for _ in range(count):
            started = time.perf_counter()
            await host.call("children")
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    return subject


def _flood(remote: Placement | None, total: int) -> Callable[[], Awaitable[float]]:
    """MiB/s of `total` bytes of stdout read to EOF (reported as a rate, so larger is faster)."""

    async def subject() -> float:
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
        if received != total:
            raise BenchError(f"flood: {received} of {total} bytes arrived")
        return total / (time.perf_counter() - started) / 2**20

    return subject


def _hosts_per_node(cluster: Any) -> int:
    """The most host workers any one node runs (a node host is its raylet's child)."""
    from subagent_ray.testing import host_workers

    raylets = {
        node.all_processes["raylet"][0].process.pid: 0
        for node in cluster.list_all_nodes()
        if "raylet" in node.all_processes
    }
    for pid in host_workers():
        try:
            parent = psutil.Process(pid).ppid()
        except psutil.NoSuchProcess:
            continue
        if parent in raylets:
            raylets[parent] += 1
    return max(raylets.values())


async def _fanout(placements: list[Placement], n: int, cluster: Any) -> tuple[float, int]:
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
        workers = _hosts_per_node(cluster)
    return per_run, workers


async def ray(ctx: Context) -> list[Section]:
    if importlib.util.find_spec("ray") is None or importlib.util.find_spec("subagent_ray") is None:
        raise BenchError("skipped: ray / subagent-ray are not installed")
    from subagent_ray import RayPlacement
    from subagent_ray.testing import local_cluster

    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    section = Section(
        "Ray placement: children on a local 3-node cluster",
        notes=[
            "A head and two nodes (`ray.cluster_utils.Cluster`) on this machine; the bench "
            "process is the Ray driver, each node runs one host actor for every child placed "
            "there. Subject and baseline run the same command (`cat`, `head`) in interleaved "
            "rounds; ratios are pair by pair. A warm host: the node host already runs (its "
            "first start, a Ray worker importing Ray, is seconds and not measured).",
            "Fan-out: N `cat` children started at once across the two nodes and held open "
            "together; parent RSS growth while all are in flight / N, and the most host "
            "workers on any node (one per node, whatever N).",
        ],
    )
    with local_cluster(NODES) as cluster:
        a = RayPlacement(address=cluster.address, resources={"node_a": 0.001})
        b = RayPlacement(address=cluster.address, resources={"node_b": 0.001})
        await _first_line(a)()  # connect the driver and start the host on both nodes
        await _first_line(b)()
        first = await paired(
            {"ray": _first_update(ctx, a), "local": _first_update(ctx, None)},
            warmup=1,
            repeat=ctx.reps(10, 3),
        )
        section.add("ACP first update, warm node host", first["ray"].scaled(1000), "ms")
        section.add("ACP first update, local", first["local"].scaled(1000), "ms")
        section.add(
            "ACP first update, warm node host / local",
            ratios(first["ray"], first["local"]),
            "×",
            Target("<=", 1.2),
        )
        line = await paired(
            {"ray": _first_line(a), "local": _first_line(None)}, warmup=1, repeat=ctx.reps(10, 3)
        )
        section.add("cat first line, warm node host", line["ray"].scaled(1000), "ms")
        section.add("cat first line, local", line["local"].scaled(1000), "ms")
        trip = await paired({"trip": _round_trip(a, 50)}, warmup=0, repeat=ctx.reps(5, 2))
        section.add("line round trip through the relay", trip["trip"].scaled(1000), "ms")
        call = await paired(
            {"call": _empty_call(cluster.address, 50)}, warmup=0, repeat=ctx.reps(5, 2)
        )
        section.add("empty call to the node host", call["call"].scaled(1000), "ms")
        size = (64 if ctx.quick else 256) << 20
        rate = await paired(
            {"relay": _flood(a, size), "local": _flood(None, size)},
            warmup=0,
            repeat=ctx.reps(3, 1),
        )
        section.add("stdout relay throughput", rate["relay"], "MiB/s")
        section.add("local pipe throughput", rate["local"], "MiB/s")
        section.add("relay / local pipe", ratios(rate["relay"], rate["local"]), "×")
        for n in QUICK_SIZES if ctx.quick else SIZES:
            per_run, workers = await _fanout([a, b], n, cluster)
            section.add(
                f"fan-out N={n}: parent RSS growth per in-flight run", Sample((per_run,)), "KiB"
            )
            section.add(
                f"fan-out N={n}: host workers per node", Sample((float(workers),)), "workers"
            )
    if live_descendants():
        raise BenchError("ray: processes left after the case")
    return [section]
