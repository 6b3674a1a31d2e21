"""`harness` CLI start-up: `--help` and the whole keyless `demo`, vs `python -c pass`."""

from __future__ import annotations

import shutil
from pathlib import Path

from _context import PYTHON, BenchError, Context
from _report import Section
from _timing import paired, process_subject, ratios


def harness_path() -> str:
    """The installed `harness` console script (beside this interpreter, else on PATH)."""
    beside = Path(PYTHON).with_name("harness")
    found = str(beside) if beside.exists() else shutil.which("harness")
    if found is None:
        raise BenchError("the `harness` console script is not installed")
    return found


async def startup(ctx: Context) -> list[Section]:
    harness = harness_path()
    section = Section(
        "harness CLI start-up vs python -c pass",
        notes=[
            "`harness --help`: parse and print help, no work. `harness demo --no-live`: the "
            "whole keyless demo (scripted model server, agent with a command and an "
            "in-process child, fake ACP child, `harness acp-agent`, fake SDK runtime, "
            "`harness sdk-runtime`), table printed at the end.",
        ],
    )
    floor = process_subject([PYTHON, "-c", "pass"])
    helps = await paired(
        {"help": process_subject([harness, "--help"]), "floor": floor},
        warmup=ctx.reps(2, 1),
        repeat=ctx.reps(10, 3),
    )
    section.add("harness --help", helps["help"].scaled(1000), "ms")
    section.add("floor: python -c pass", helps["floor"].scaled(1000), "ms")
    section.add("harness --help / floor", ratios(helps["help"], helps["floor"]), "×")
    demo = await paired(
        {"demo": process_subject([harness, "demo", "--no-live"]), "floor": floor},
        warmup=0,
        repeat=ctx.reps(2, 1),
    )
    section.add("harness demo --no-live", demo["demo"], "s")
    section.add("harness demo / floor", ratios(demo["demo"], demo["floor"]), "×")
    return [section]
