"""Fan-out isolation (issue 29): `run_fanout` with a worktree per child vs a plain concurrent fan-out.

For each N, one fake ACP child per slot, each writing one file: the "plain" subject starts N
runs at once in one shared directory, awaits and disposes them (what a script would do); the
"worktree" subject is `harness.fanout.run_fanout(..., isolation="worktree")` on a repository of
200 committed files: a worktree and a `fanout/` branch per child, the child's patch read
afterwards, everything removed. Per batch: wall time (start to everything removed); the figure
asked for is the added wall time per child, (worktree − plain) / N, pair by pair in the same
rounds, and the ratio worktree / plain.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import anyio
from _context import PYTHON, BenchError, Context, live_descendants
from _report import Section
from _timing import Sample, paired, ratios
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import SubagentRegistry, SubagentRequest, SubagentRun

SIZES = (1, 4, 16)
QUICK_SIZES = (1, 4)
FILES = 200


def _writer() -> ACPProvider:
    script = {"text": "ok", "markers": [{"at": "prompt", "path": "out.txt", "text": "x\n"}]}
    return ACPProvider(
        ACPConfig(
            provider_name="writer",
            command=PYTHON,
            args=["-m", "subagent_acp.testing", "--script-json", json.dumps(script)],
        )
    )


def _repository(root: Path) -> Path:
    repo = root / "fanout-repo"
    (repo / "src").mkdir(parents=True)
    for index in range(FILES):
        (repo / "src" / f"m{index}.py").write_text(f"VALUE = {index}\n" * 20, "utf-8")
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return repo


def _leftovers(repo: Path) -> str:
    worktrees = subprocess.run(
        ["git", "-C", str(repo), "worktree", "list", "--porcelain"],
        check=True,
        capture_output=True,
        text=True,
        encoding="utf-8",
    ).stdout
    branches = subprocess.run(
        ["git", "-C", str(repo), "branch", "--list", "fanout/*"],
        check=True,
        capture_output=True,
        text=True,
        encoding="utf-8",
    ).stdout
    return "" if worktrees.count("worktree ") == 1 and not branches else "worktrees or branches"


async def fanout_isolation(ctx: Context) -> list[Section]:
    from harness.fanout import run_fanout

    sizes = QUICK_SIZES if ctx.quick else SIZES
    repo = _repository(ctx.work)
    shared = ctx.work / "fanout-shared"
    shared.mkdir()
    patches = ctx.work / "fanout-patches"
    runs = ctx.work / "fanout-runs"  # the run records stay out of the user's state directory
    registry = SubagentRegistry()
    registry.register(_writer())

    def worktree(size: int):
        async def subject() -> float:
            started = time.perf_counter()
            outcomes = await run_fanout(
                registry,
                ["writer"] * size,
                SubagentRequest(prompt="bench", cwd=repo),
                patch_dir=patches,
                runs_dir=runs,
            )
            elapsed = time.perf_counter() - started
            if [len(o.files) for o in outcomes] != [1] * size:
                raise BenchError(f"worktree fan-out of {size}: a child's patch is not its file")
            if _leftovers(repo) or live_descendants():
                raise BenchError(f"worktree fan-out of {size}: something was left")
            return elapsed

        return subject

    def plain(size: int):
        async def subject() -> float:
            runs: list[SubagentRun] = []
            outputs: list[str] = []

            async def one() -> None:
                run = await registry.start("writer", SubagentRequest(prompt="b", cwd=shared))
                runs.append(run)
                async with run:
                    outputs.append((await run.result()).output)

            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for _ in range(size):
                    group.start_soon(one)
            elapsed = time.perf_counter() - started
            if outputs != ["ok"] * size or live_descendants():
                raise BenchError(f"plain fan-out of {size}: a run failed or was left")
            return elapsed

        return subject

    section = Section(
        "Fan-out isolation: a git worktree per child vs a plain concurrent fan-out",
        notes=[
            f"N = {', '.join(map(str, sizes))} fake ACP children, each writing one file. plain: "
            "N `start()`s at once in one shared directory, each result awaited and the run "
            'disposed. worktree: `run_fanout(isolation="worktree")` on a repository of '
            f"{FILES} committed files (a worktree and a `fanout/` branch per child, created one "
            "at a time without a checkout, since concurrent `git worktree add`s trip over each "
            "other's half-made entries, then each checked out on its own; the child's patch read "
            "with "
            "a private index; every worktree, branch and directory removed before it returns).",
            "Added wall per child: (worktree batch − plain batch) / N, pair by pair in the same "
            "interleaved rounds.",
        ],
    )
    async with registry:
        for size in sizes:
            samples = await paired(
                {"worktree": worktree(size), "plain": plain(size)},
                warmup=1,
                repeat=ctx.reps(3, 1),
            )
            tree, bare = samples["worktree"], samples["plain"]
            added = Sample(
                tuple((a - b) / size for a, b in zip(tree.values, bare.values, strict=True))
            )
            section.add(f"N={size}: plain fan-out, batch wall", bare.scaled(1000), "ms")
            section.add(f"N={size}: worktree fan-out, batch wall", tree.scaled(1000), "ms")
            section.add(f"N={size}: added wall per child", added.scaled(1000), "ms")
            section.add(f"N={size}: worktree / plain", ratios(tree, bare), "×")
    return [section]
