"""`process_execute`: a 1 GB output flood, and the subjects for one tiny command.

Baselines are what a user would otherwise write: the same producer piped into `cat >
/dev/null`, and `subprocess.run(["bash", "-c", "true"])` (`subprocess_bash_true`; the older
`/bin/bash` form and `capture_output=True` kept for reference), and the floor of any contained
spawn: `open_managed_process` of the same command (`managed_bash_true`) and the guard's blocking
round trip (`guarded_floor`). The tiny-command subjects are measured in the `containment` case
beside the guard's own cost, so the suite times them once.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

from _context import BENCH, PYTHON, BenchError, Context
from _report import Section, Target
from _timing import Sample, Subject, paired, ratios
from model_agent.tools import ProcessExecuteTool, RequestContext
from subagent_core import CancelSignal, child_env
from subagent_core.kit import open_managed_process
from subagent_core.testing import guarded_round_trip

FLOOD_BYTES = 1_000_000_000
QUICK_FLOOD_BYTES = 100_000_000


def _context(ctx: Context) -> RequestContext:
    stat = os.stat(ctx.work)
    return RequestContext(
        runtime="model",
        mode="execute",
        space="local",
        depth=0,
        workspace=ctx.work,
        workspace_identity=(stat.st_dev, stat.st_ino),
        shell="/bin/bash",
        tool_names=("process_execute",),
        cancel=CancelSignal(),
    )


def tool_true(ctx: Context) -> Subject:
    tool = ProcessExecuteTool()

    async def subject() -> float:
        context = _context(ctx)
        started = time.perf_counter()
        outcome = await tool.call({"command": "true"}, context)
        elapsed = time.perf_counter() - started
        if json.loads(outcome.content)["status"] != "completed":
            raise BenchError("process_execute `true` did not complete")
        return elapsed

    return subject


async def subprocess_true() -> float:
    started = time.perf_counter()
    # Blocking on purpose: this is the call a user would write.
    subprocess.run(["/bin/bash", "-c", "true"], check=True)  # noqa: ASYNC221
    return time.perf_counter() - started


async def subprocess_bash_true() -> float:
    """`subprocess.run(["bash", "-c", "true"])` as a user types it (bash found on PATH)."""
    started = time.perf_counter()
    subprocess.run(["bash", "-c", "true"], check=True)  # noqa: ASYNC221
    return time.perf_counter() - started


def managed_bash_true(ctx: Context) -> Subject:
    """The contained spawn `process_execute` is built on, doing the same I/O: `bash -c true`
    with stdin from /dev/null and both streams piped and read to EOF, to a confirmed-gone tree.
    What is left between this and the tool is the tool's own work (validation, the cwd check,
    the head/tail buffers, the JSON result)."""
    env = child_env({})

    async def subject() -> float:
        started = time.perf_counter()
        async with open_managed_process(
            ["/bin/bash", "-c", "true"],
            cwd=ctx.work,
            env=env,
            stdin="devnull",
            stdout="pipe",
            stderr="pipe",
            eof_grace_seconds=0.0,
        ) as proc:
            assert proc.stdout is not None
            assert proc.stderr is not None
            async for _ in proc.stdout:
                pass
            async for _ in proc.stderr:
                pass
            await proc.wait()
            if not await proc.terminate(0.0, 1.0, 1.0):
                raise BenchError("the tree of `bash -c true` was not confirmed gone")
        return time.perf_counter() - started

    return subject


async def subprocess_true_captured() -> float:
    """The same call keeping stdout and stderr, as `process_execute` does (context, no target)."""
    started = time.perf_counter()
    subprocess.run(["/bin/bash", "-c", "true"], check=True, capture_output=True)  # noqa: ASYNC221
    return time.perf_counter() - started


def guarded_floor(ctx: Context) -> Subject:
    """`bash -c true` through a guard with a blocking client: the least a contained spawn costs."""
    env = child_env({})

    async def subject() -> float:
        started = time.perf_counter()
        code = guarded_round_trip(["/bin/bash", "-c", "true"], cwd=ctx.work, env=env)
        elapsed = time.perf_counter() - started
        if code != 0:
            raise BenchError("the guarded round trip of `true` did not exit 0")
        return elapsed

    return subject


def flood_subject(ctx: Context, mode: str, size: int, rss: list[float]) -> Subject:
    async def subject() -> float:
        done = subprocess.run(  # noqa: ASYNC221 (nothing else runs meanwhile)
            [PYTHON, str(BENCH / "_flood_probe.py"), mode, str(size)],
            cwd=ctx.work,
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=False,
        )
        if done.returncode != 0:
            raise BenchError(f"flood probe ({mode}) failed with exit code {done.returncode}")
        found = json.loads(done.stdout)
        rss.append(found["rss_self_mb"])
        return float(found["seconds"])

    return subject


async def process_execute(ctx: Context) -> list[Section]:
    size = QUICK_FLOOD_BYTES if ctx.quick else FLOOD_BYTES
    flood = Section(
        f"process_execute: {size / 1e9:g} GB output flood",
        notes=[
            f"`yes | head -c {size}` through `process_execute` (keeps head and tail, counts "
            "every byte) vs the same producer piped into `cat > /dev/null` with "
            "`subprocess.run`; each in a fresh interpreter that imported `model_agent`.",
            "Peak RSS is the interpreter's own high-water mark (`VmHWM`, children excluded).",
        ],
    )
    tool_rss: list[float] = []
    cat_rss: list[float] = []
    found = await paired(
        {
            "tool": flood_subject(ctx, "tool", size, tool_rss),
            "cat": flood_subject(ctx, "cat", size, cat_rss),
        },
        warmup=0,
        repeat=ctx.reps(3, 1),
    )
    mb = size / 1e6
    flood.add("process_execute flood", found["tool"].inverted(mb), "MB/s")
    flood.add("cat > /dev/null", found["cat"].inverted(mb), "MB/s")
    flood.add(
        "process_execute / cat throughput",
        ratios(found["cat"], found["tool"]),
        "×",
        Target(">=", 0.5),
    )
    flood.add("peak RSS, interpreter running process_execute", Sample(tuple(tool_rss)), "MiB")
    flood.add("peak RSS, interpreter running subprocess.run", Sample(tuple(cat_rss)), "MiB")
    return [flood]


def tool_flood(ctx: Context, size: int) -> Subject:
    """The flood through `process_execute` in this process (for profiling)."""
    tool = ProcessExecuteTool()

    async def subject() -> float:
        context = _context(ctx)
        started = time.perf_counter()
        outcome = await tool.call(
            {"command": f"yes | head -c {size}", "timeout_ms": 600_000}, context
        )
        elapsed = time.perf_counter() - started
        if json.loads(outcome.content)["stdoutTotalBytes"] != size:
            raise BenchError("the flood lost bytes")
        return elapsed

    return subject
