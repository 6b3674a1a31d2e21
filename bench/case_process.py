"""`process_execute`: a 1 GB output flood, and the subjects for one tiny command.

Baselines are what a user would otherwise write: the same producer piped into `cat >
/dev/null`, and `subprocess.run(["/bin/bash", "-c", "true"])`, also with `capture_output=True`
(`tool_true` / `subprocess_true` / `subprocess_true_captured`, measured in the `containment`
case beside the guard's own cost, so the suite times them once), and the guard's floor for the
same command (`guarded_floor`).
"""

from __future__ import annotations

import json
import os
import subprocess
import time

from _context import BENCH, PYTHON, BenchError, Context
from _report import Section, Target
from _timing import Sample, Subject, paired, ratios
from model_agent import ProcessExecuteTool, RequestContext
from subagent_core import CancelSignal, child_env
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
