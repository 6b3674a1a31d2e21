"""Containment: what the guard costs per spawn, and how fast a settled, deaf child is gone.

Subjects, measured in the same interleaved rounds:
- `open_managed_process` of `/bin/true` to "tree gone" (the guard path every provider uses);
- the same spawn without a guard (`anyio.open_process` in a new session, wait, close) —
  today's pre-containment path;
- `subprocess.run(["/bin/true"])`, the floor;
- the rejected design: a fresh Python guard per spawn (`python -I -S guard.py -- /bin/true`).
Plus `process_execute` of `true`, re-anchored on the floor of a contained spawn (issue 26):
/ `open_managed_process` of the same `bash -c true` (≤ 1.1×) and / `subprocess.run(["bash",
"-c", "true"])` (≤ 1.3×), with issue 20's `/bin/bash` ratio (then ≤ 1.2×) kept for reference;
and the disposal of an EOF-deaf, TERM-trapping child with the default graces (≤ 1.5 s).
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
from case_process import (
    guarded_floor,
    managed_bash_true,
    subprocess_bash_true,
    subprocess_true,
    subprocess_true_captured,
    tool_true,
)
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
            "`process_execute` with `true` vs the floor of any contained spawn, "
            "`open_managed_process` of the same `/bin/bash -c true` doing the same I/O (stdin "
            "/dev/null, both streams piped and read to EOF, tree confirmed gone; target ≤ "
            '1.1×), and vs `subprocess.run(["bash", "-c", "true"])` (target ≤ 1.3×). For '
            'reference, no target: issue 20\'s ratio to `subprocess.run(["/bin/bash", "-c", '
            '"true"])` (then ≤ 1.2×, a bound below the cost of containment itself), the same '
            "call with `capture_output=True`, and the guard's blocking round trip "
            "(`subagent_core.testing.guarded_round_trip`, no event loop).",
        ],
    )
    found = await paired(
        {
            "tool": tool_true(ctx),
            "managed": managed_bash_true(ctx),
            "bash": subprocess_bash_true,
            "subprocess": subprocess_true,
            "captured": subprocess_true_captured,
            "floor": guarded_floor(ctx),
        },
        warmup=ctx.reps(5, 2),
        # 200 rounds of ~2 ms subjects (about 3 s): at 40 the pairwise ratios spread 0.7–1.5×,
        # wider than the margin a ≤ 1.1× target tests, and the median moved by 0.1× run to run.
        repeat=ctx.reps(200, 10),
    )
    tool.add("process_execute true", found["tool"].scaled(1000), "ms")
    tool.add("open_managed_process bash -c true", found["managed"].scaled(1000), "ms")
    tool.add("subprocess.run bash -c true", found["bash"].scaled(1000), "ms")
    tool.add(
        "process_execute / open_managed_process",
        ratios(found["tool"], found["managed"]),
        "×",
        Target("<=", 1.1),
    )
    tool.add(
        "process_execute / subprocess.run",
        ratios(found["tool"], found["bash"]),
        "×",
        Target("<=", 1.3),
    )
    tool.add("subprocess.run /bin/bash -c true", found["subprocess"].scaled(1000), "ms")
    tool.add("subprocess.run, capture_output=True", found["captured"].scaled(1000), "ms")
    tool.add(
        "process_execute / subprocess.run /bin/bash (issue 20, reference)",
        ratios(found["tool"], found["subprocess"]),
        "×",
    )
    tool.add(
        "process_execute / subprocess.run, capture_output=True",
        ratios(found["tool"], found["captured"]),
        "×",
    )
    tool.add("guarded round trip of bash -c true", found["floor"].scaled(1000), "ms")
    tool.add(
        "guarded round trip / subprocess.run (the guard's floor)",
        ratios(found["floor"], found["bash"]),
        "×",
    )

    goodbye = Section(
        "containment: dispose of an EOF-deaf, TERM-trapping child",
        notes=["`terminate()` with the default graces (EOF 0.5 s, TERM 0.5 s, then SIGKILL)."],
    )
    deaf = await paired({"deaf": dispose_deaf}, warmup=1, repeat=ctx.reps(5, 2))
    goodbye.add("dispose, default graces", deaf["deaf"], "s", Target("<=", 1.5, "s"))
    return [spawn, tool, goodbye]
