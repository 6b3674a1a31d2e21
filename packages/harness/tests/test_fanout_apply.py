"""The real `harness fanout` with `--verify`, then `list`, `report` and `apply` on its run.

`apply` must land a child's patch exactly, or change nothing at all: every file's bytes, the
index, HEAD and every ref are compared before and after, for a conflicting edit that is
unstaged, staged or committed, and for a real SIGINT in the middle of an apply.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_core.kit import ManagedProcess

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
WRONG = "def add(a, b):\n    return a * b\n\n\ndef sub(a, b):\n    return a - b\n"
TEST = "from calc import add\n\nassert add(2, 3) == 5, 'add is wrong'\n"
SECRET = "verify-output-secret-4711"
MANY = 600
"""Files the big child writes: enough that an apply takes a while to stage."""


Git = Callable[..., str]
Read = Callable[[Path], str]
Entries = Callable[[Path], list[Path]]
EnvFor = Callable[[dict[str, Path]], dict[str, str]]
Output = tuple[int, str, str]
Harness = Callable[[list[str], dict[str, Path]], Awaitable[Output]]
FanOut = Callable[..., Awaitable[list[Any]]]


def writes(files: dict[str, str]) -> dict[str, Any]:
    """A fake child's script: it writes `files` (relative to its cwd) when it gets the prompt."""
    markers = [{"at": "prompt", "path": path, "text": text} for path, text in files.items()]
    return {"text": "done", "markers": markers}


@pytest.fixture
def setup(
    tmp_path: Path,
    git: Git,
    make_repo: Callable[[dict[str, str]], Path],
    acp_table: Callable[[str, dict[str, Any]], str],
) -> dict[str, Path]:
    repo = make_repo({"calc.py": BUGGY, "test_calc.py": TEST, "other.txt": "other\n"})
    git(repo, "config", "user.name", "t")
    git(repo, "config", "user.email", "t@t")
    git(repo, "branch", "keep-me")
    config = tmp_path / "harness.toml"
    many = {f"gen-{index:04}.txt": f"line {index}\n" for index in range(MANY)}
    config.write_text(
        acp_table("fixer", writes({"calc.py": FIXED}))
        + acp_table("breaker", writes({"calc.py": WRONG}))
        + acp_table("cheater", writes({"test_calc.py": "print('ok')\n"}))
        + acp_table("adder", writes({"calc.py": FIXED, "added.py": "x = 1\n"}))
        + acp_table("many", writes(many)),
        encoding="utf-8",
    )
    temp = tmp_path / "tmp"
    temp.mkdir()
    return {"repo": repo, "config": config, "temp": temp, "state": tmp_path / "state"}


@pytest.fixture
def harness(
    run_harness: Callable[..., Awaitable[Output]],
    env_for: EnvFor,
) -> Harness:
    """`python -m harness ARGS` in the setup's repository, with its temp and state dirs."""

    async def run(args: list[str], paths: dict[str, Path]) -> Output:
        return await run_harness(args, cwd=paths["repo"], env=env_for(paths))

    return run


@pytest.fixture
def fan_out(harness: Harness) -> FanOut:
    """`harness fanout --json -a AGENT…`, which must exit 0; returns its JSON records."""

    async def run(paths: dict[str, Path], *agents: str, extra: tuple[str, ...] = ()) -> list[Any]:
        args = ["fanout", "--config", str(paths["config"]), "--json", *extra]
        for agent in agents:
            args += ["-a", agent]
        code, out, err = await harness([*args, "fix add"], paths)
        assert code == 0, err
        return [json.loads(line) for line in out.splitlines()]

    return run


def generated(repo: Path) -> list[str]:
    return sorted(path.name for path in repo.glob("gen-*.txt"))


def staging_present(git_dir: Path) -> bool:
    return any(p.name.startswith("harness-fanout-apply-") for p in git_dir.iterdir())


def state_of(git: Git, repo: Path) -> dict[str, object]:
    """Every byte of the work tree and the index, HEAD, every ref, and `git status`."""
    files = {
        str(path.relative_to(repo)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(repo.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(repo).parts
    }
    return {
        "files": files,
        "status": git(repo, "status", "--porcelain"),
        "index": git(repo, "ls-files", "--stage"),
        "head": git(repo, "rev-parse", "HEAD"),
        "refs": git(repo, "for-each-ref"),
        "git dir": sorted(p.name for p in (repo / ".git").iterdir() if p.name != "index"),
    }


async def test_verify_ranks_the_table_and_json_and_keeps_its_output_to_the_log(
    setup: dict[str, Path],
    git: Git,
    harness: Harness,
    fan_out: FanOut,
    entries: Entries,
    read: Read,
) -> None:
    verify = f"echo {SECRET}; {sys.executable} test_calc.py"
    args = ["fanout", "--config", str(setup["config"]), "-a", "cheater", "-a", "breaker"]
    args += ["-a", "fixer", "--verify", verify, "--report", str(setup["state"] / "r.html")]
    with anyio.fail_after(120):
        code, out, err = await harness([*args, "fix add"], setup)
        assert code == 0, err
        rows = [line for line in out.splitlines() if line.count("│") > 5]
        table = [[cell.strip() for cell in row.split("│")[1:-1]] for row in rows]
        assert [(row[1], row[3]) for row in table] == [
            ("fixer", "pass"),
            ("breaker", "fail (exit 1)"),
            ("cheater", "tampered"),
        ]
        assert SECRET not in out + err
        assert "best: #3 fixer; take its patch with harness fanout apply " in out
        assert f"report: {setup['state'] / 'r.html'}" in out
        records = await fan_out(setup, "fixer", "breaker", extra=("--verify", verify))
    children, summary = records[:-1], records[-1]
    assert SECRET not in json.dumps(records)
    by_agent = {child["agent"]: child for child in children}
    fixer, breaker = by_agent["fixer"], by_agent["breaker"]
    assert (fixer["rank"], breaker["rank"]) == (1, 2)
    assert fixer["verify"]["status"] == "pass"
    assert breaker["verify"] | {"seconds": 0} == {
        "status": "fail",
        "exit_code": 1,
        "signal": None,
        "seconds": 0,
        "protected": 1,
        "protected_changed": 0,
        "start_failure": None,
        "log": breaker["verify"]["log"],
    }
    log = Path(breaker["verify"]["log"])
    assert log.parent == setup["state"] / "fanout" / summary["run"]
    assert SECRET in read(log)
    assert (summary["passed"], summary["total"]) == (1, 2)
    repo = setup["repo"]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(repo, "branch", "--list", "fanout/*") == ""
    assert entries(setup["temp"]) == []
    assert git(repo, "status", "--porcelain") == ""


async def test_list_shows_the_runs_and_report_regenerates_the_page(
    setup: dict[str, Path], harness: Harness, fan_out: FanOut, read: Read
) -> None:
    with anyio.fail_after(120):
        first = (await fan_out(setup, "fixer"))[-1]["run"]
        second = (await fan_out(setup, "breaker", "fixer", extra=("--verify", "true")))[-1]["run"]
        code, out, _ = await harness(["fanout", "list", "--json"], setup)
        assert code == 0
        listed = [json.loads(line) for line in out.splitlines()]
        assert [r["run"] for r in listed if r["type"] == "run"] == [second, first]
        assert (listed[0]["children"], listed[0]["verify"]) == (2, True)
        code, out, _ = await harness(["fanout", "list"], setup)
        assert code == 0
        assert first in out
        assert second in out
        code, out, err = await harness(["fanout", "report"], setup)
        assert code == 0, err
    page = Path(out.strip())
    assert page == setup["state"] / "fanout" / second / "report.html"
    text = read(page)
    assert "default-src &#x27;none&#x27;" in text or "default-src 'none'" in text
    assert text.count('class="child-row"') == 2


@pytest.mark.parametrize("isolation", ["worktree", "copy"])
async def test_apply_lands_the_patch_exactly(
    setup: dict[str, Path],
    isolation: str,
    git: Git,
    harness: Harness,
    fan_out: FanOut,
    read: Read,
) -> None:
    repo = setup["repo"]
    with anyio.fail_after(120):
        [child, summary] = await fan_out(setup, "fixer", extra=("--isolation", isolation))
        code, out, err = await harness(["fanout", "apply", summary["run"], "fixer"], setup)
    assert code == 0, err
    assert out.startswith(f"applied #1 fixer of run {summary['run']}: 1 file (0 added, 1 modified")
    patch = read(Path(child["patch"]))
    assert git(repo, "diff", "--binary", "--full-index", "--no-renames", "--no-color") == patch
    assert git(repo, "diff", "--cached") == ""  # the index is untouched
    assert "calc.py" not in out + err  # a child's paths are not printed


async def test_apply_adds_new_files_and_keeps_an_unrelated_local_edit(
    setup: dict[str, Path], harness: Harness, fan_out: FanOut, read: Read
) -> None:
    repo = setup["repo"]
    with anyio.fail_after(120):
        [_, summary] = await fan_out(setup, "adder")
        # Unrelated: another file, and the same file away from the child's hunk.
        (repo / "other.txt").write_text("other, edited\n", encoding="utf-8")
        edited = BUGGY.replace(
            "def sub(a, b):\n    return a - b\n", "def sub(a, b):\n    return a - b  # ok\n"
        )
        (repo / "calc.py").write_text(edited, encoding="utf-8")
        code, out, err = await harness(["fanout", "apply", "adder"], setup)  # RUN: the latest
    assert code == 0, err
    assert "2 files (1 added, 1 modified, 0 deleted)" in out
    assert read(repo / "added.py") == "x = 1\n"
    assert read(repo / "other.txt") == "other, edited\n"
    calc = read(repo / "calc.py")
    assert "return a + b\n" in calc
    assert "return a - b  # ok\n" in calc
    del summary


@pytest.mark.parametrize("how", ["unstaged", "staged", "committed"])
async def test_a_conflicting_edit_refuses_and_changes_nothing(
    setup: dict[str, Path], how: str, git: Git, harness: Harness, fan_out: FanOut
) -> None:
    repo = setup["repo"]
    with anyio.fail_after(120):
        [_, summary] = await fan_out(setup, "fixer")
        (repo / "calc.py").write_text(BUGGY.replace("a - b", "b - a", 1), encoding="utf-8")
        (repo / "other.txt").write_text("unrelated\n", encoding="utf-8")
        if how in ("staged", "committed"):
            git(repo, "add", "calc.py")
        if how == "committed":
            git(repo, "commit", "-qm", "mine")
        before = state_of(git, repo)
        code, out, err = await harness(["fanout", "apply", summary["run"], "#1"], setup)
    assert (code, out) == (1, "")
    assert err == (
        "harness: not applied: the patch conflicts with changes in the workspace (unstaged, "
        "staged or committed since the run); nothing was changed\n"
    )
    assert state_of(git, repo) == before


async def test_a_staged_conflict_under_a_clean_work_tree_still_refuses(
    setup: dict[str, Path], git: Git, harness: Harness, fan_out: FanOut
) -> None:
    """The index alone conflicts (the file was staged, then restored in the work tree)."""
    repo = setup["repo"]
    with anyio.fail_after(120):
        [_, summary] = await fan_out(setup, "fixer")
        (repo / "calc.py").write_text(BUGGY.replace("a - b", "b - a", 1), encoding="utf-8")
        git(repo, "add", "calc.py")
        (repo / "calc.py").write_text(BUGGY, encoding="utf-8")
        before = state_of(git, repo)
        code, _, err = await harness(["fanout", "apply", summary["run"], "fixer"], setup)
    assert code == 1, err
    assert state_of(git, repo) == before


async def test_apply_names_what_it_cannot_find(
    setup: dict[str, Path], harness: Harness, fan_out: FanOut
) -> None:
    with anyio.fail_after(120):
        code, _, err = await harness(["fanout", "apply", "fixer"], setup)
        assert (code, err) == (2, "harness: no fan-out run is recorded yet\n")
        [_, summary] = await fan_out(setup, "fixer")
        code, _, err = await harness(["fanout", "apply", summary["run"], "nobody"], setup)
    assert code == 2
    assert err == f"harness: run {summary['run']} has no child on 'nobody' (its agents: fixer)\n"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_ctrl_c_during_apply_leaves_nothing_or_everything(
    setup: dict[str, Path],
    wait_for_staging: Any,
    git: Git,
    fan_out: FanOut,
    open_harness: Callable[..., AbstractAsyncContextManager[ManagedProcess]],
    env_for: EnvFor,
    drain: Callable[[ManagedProcess], Awaitable[tuple[str, str]]],
    read: Read,
) -> None:
    """A real SIGINT once the apply has begun staging its files: all or nothing, no debris."""
    repo = setup["repo"]
    with anyio.fail_after(180):
        [_, summary] = await fan_out(setup, "many")
        before = state_of(git, repo)
        result: dict[str, tuple[str, str]] = {}
        async with open_harness(
            ["fanout", "apply", summary["run"], "many"], cwd=repo, env=env_for(setup)
        ) as process:
            async with anyio.create_task_group() as tg:

                async def collect() -> None:
                    result["io"] = await drain(process)

                tg.start_soon(collect)
                await wait_for_staging(repo / ".git", process)
                if process.outcome is None:
                    os.kill(process.pid, signal.SIGINT)
            outcome = await process.wait()
    out, err = result["io"]
    after = state_of(git, repo)
    written = generated(repo)
    if outcome.exit_code == 130 and "nothing was changed" in err:
        assert after == before
    else:
        assert outcome.exit_code in (0, 130), err
        assert len(written) == MANY, out
        assert all(read(repo / name) == f"line {int(name[4:8])}\n" for name in written)
        assert [after[key] for key in ("head", "refs", "index")] == [
            before[key] for key in ("head", "refs", "index")
        ]
    assert after["git dir"] == before["git dir"]  # the staging folder is gone
    assert "Traceback" not in err


@pytest.fixture
def wait_for_staging() -> Any:
    """Waits until an apply's staging folder appears in the git dir (or the apply ended)."""

    async def wait(git_dir: Path, process: Any) -> None:
        # Another process makes the folder: there is no in-process event to wait on.
        while process.outcome is None:
            if staging_present(git_dir):
                return
            await anyio.sleep(0.005)

    return wait
