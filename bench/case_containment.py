"""Containment: what the guard costs per spawn, and how fast a settled, deaf child is gone.

Subjects, measured in the same interleaved rounds:
- `open_managed_process` of `/bin/true` to "tree gone" (the guard path every provider uses);
- the same spawn without a guard (`anyio.open_process` in a new session, wait, close) —
  today's pre-containment path;
- `subprocess.run(["/bin/true"])`, the floor;
- the rejected design: a fresh Python guard per spawn (`python -I -S guard.py -- /bin/true`).
Plus `process_execute` of `true` / `subprocess.run` (issue 20's ≤ 1.2× target) and the
disposal of an EOF-deaf, TERM-trapping child with the default graces (target ≤ 1.5 s).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio
from _context import PYTHON, BenchError, Context
from _report import Section, Target
from _timing import paired, process_subject, ratios
from case_process import guarded_floor, subprocess_true, subprocess_true_captured, tool_true
from subagent_core.kit import open_managed_process

GUARD = Path(sys.modules["subagent_core"].__file__ or "").with_name("guard.py")
DEAF = """
import signal, sys, threading
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
threading.Event().wait()
"""


async def managed_true() -> float:
    started = time.perf_counter()
    async with open_managed_process(["/bin/true"], stdin="devnull", stdout="devnull") as proc:
        await proc.wait()
        if not await proc.terminate(0.0, 1.0, 1.0):
            raise BenchError("the tree of `true` was not confirmed gone")
    return time.perf_counter() - started


async def direct_true() -> float:
    started = time.perf_counter()
    process = await anyio.open_process(
        ["/bin/true"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    async with process:
        await process.wait()
    return time.perf_counter() - started


async def dispose_deaf() -> float:
    async with open_managed_process([PYTHON, "-c", DEAF]) as proc:
        assert proc.stdout is not None
        await proc.stdout.receive()
        started = time.perf_counter()
        if not await proc.terminate():
            raise BenchError("the deaf child was not confirmed gone")
        return time.perf_counter() - started


async def containment(ctx: Context) -> list[Section]:
    spawn = Section(
        "containment: the cost of a guarded spawn",
        notes=[
            "`open_managed_process(['/bin/true'])` to a confirmed-gone tree (guarded: the "
            "request goes to the per-host guard server, a pre-forked guard posix_spawns "
            "the command and reports exit and 'tree gone') vs the unguarded spawn "
            "(`anyio.open_process`, new session, wait) vs `subprocess.run(['/bin/true'])`; "
            "the last row is the rejected design, a fresh `python -I -S guard.py` per spawn.",
        ],
    )
    samples = await paired(
        {
            "guarded": managed_true,
            "direct": direct_true,
            "floor": process_subject(["/bin/true"]),
            "per-run python guard": process_subject(
                [PYTHON, "-I", "-S", str(GUARD), "--", "/bin/true"]
            ),
        },
        warmup=ctx.reps(5, 2),
        repeat=ctx.reps(40, 10),
    )
    spawn.add("guarded spawn of true", samples["guarded"].scaled(1000), "ms")
    spawn.add("unguarded spawn of true", samples["direct"].scaled(1000), "ms")
    spawn.add("subprocess.run true", samples["floor"].scaled(1000), "ms")
    spawn.add("per-run python guard", samples["per-run python guard"].scaled(1000), "ms")
    spawn.add("guarded / unguarded", ratios(samples["guarded"], samples["direct"]), "×")
    spawn.add("guarded / subprocess.run", ratios(samples["guarded"], samples["floor"]), "×")
    spawn.add(
        "per-run python guard / subprocess.run",
        ratios(samples["per-run python guard"], samples["floor"]),
        "×",
    )

    tool = Section(
        "containment: process_execute of true",
        notes=[
            '`process_execute` with `true` vs `subprocess.run(["/bin/bash", "-c", "true"])`; '
            "the same call with `capture_output=True` (both streams kept, as the tool keeps "
            "them) is context beside the target, and so is the guard's floor: the same "
            "command through a guard with a blocking client and no event loop "
            "(`subagent_core.testing.guarded_round_trip`), what any contained spawn costs.",
        ],
    )
    found = await paired(
        {
            "tool": tool_true(ctx),
            "subprocess": subprocess_true,
            "captured": subprocess_true_captured,
            "floor": guarded_floor(ctx),
        },
        warmup=ctx.reps(5, 2),
        repeat=ctx.reps(40, 10),
    )
    tool.add("process_execute true", found["tool"].scaled(1000), "ms")
    tool.add("subprocess.run bash -c true", found["subprocess"].scaled(1000), "ms")
    tool.add("subprocess.run, capture_output=True", found["captured"].scaled(1000), "ms")
    tool.add(
        "process_execute / subprocess.run",
        ratios(found["tool"], found["subprocess"]),
        "×",
        Target("<=", 1.2),
    )
    tool.add(
        "process_execute / subprocess.run, capture_output=True",
        ratios(found["tool"], found["captured"]),
        "×",
    )
    tool.add("guarded round trip of bash -c true", found["floor"].scaled(1000), "ms")
    tool.add(
        "guarded round trip / subprocess.run (the guard's floor)",
        ratios(found["floor"], found["subprocess"]),
        "×",
    )

    goodbye = Section(
        "containment: dispose of an EOF-deaf, TERM-trapping child",
        notes=["`terminate()` with the default graces (EOF 0.5 s, TERM 0.5 s, then SIGKILL)."],
    )
    deaf = await paired({"deaf": dispose_deaf}, warmup=1, repeat=ctx.reps(5, 2))
    goodbye.add("dispose, default graces", deaf["deaf"], "s", Target("<=", 1.5, "s"))
    return [spawn, tool, goodbye]
