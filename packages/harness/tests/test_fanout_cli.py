"""The real `python -m harness fanout`: the table, `--json`, exit codes, and a real Ctrl-C."""

from __future__ import annotations

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

CRASH = "Subagent failure (provider: crasher; stage: process; category: process-exit; exit code: 3)"

Git = Callable[..., str]
EnvFor = Callable[[dict[str, Path]], dict[str, str]]
RunHarness = Callable[..., Awaitable[tuple[int, str, str]]]


@pytest.fixture
def setup(
    tmp_path: Path,
    make_repo: Callable[[dict[str, str]], Path],
    acp_table: Callable[[str, dict[str, Any]], str],
) -> dict[str, Path]:
    repo = make_repo({"base.txt": "one\n"})
    started = tmp_path / "started"
    started.mkdir()
    config = tmp_path / "harness.toml"
    usage = {"totalTokens": 12, "inputTokens": 5, "outputTokens": 7}
    config.write_text(
        acp_table(
            "writer",
            {
                "text": "done",
                "usage": usage,
                "markers": [{"at": "prompt", "path": "w.txt", "text": "w\n"}],
            },
        )
        + acp_table("crasher", {"text": "Working", "crash": {"at": "prompt", "exit_code": 3}})
        + acp_table(
            "sleeper",
            {
                "text": "Working",
                "hang_at": "prompt",
                "markers": [
                    {"at": "prompt", "path": "s.txt", "text": "s\n"},
                    {"at": "prompt", "path": str(started / "sleeper"), "text": "1"},
                ],
            },
        )
        + acp_table(
            "napper",
            {
                "text": "Working",
                "hang_at": "prompt",
                "markers": [{"at": "prompt", "path": str(started / "napper"), "text": "1"}],
                # Hostile: deaf to session/cancel, EOF and SIGTERM; only SIGKILL ends it.
                "ignore_cancel": True,
                "ignore_eof": True,
                "trap_sigterm": True,
            },
        ),
        encoding="utf-8",
    )
    temp = tmp_path / "tmp"
    temp.mkdir()
    return {
        "repo": repo,
        "config": config,
        "temp": temp,
        "state": tmp_path / "state",
        "started": started,
    }


def assert_nothing_left(git: Git, paths: dict[str, Path]) -> None:
    repo = paths["repo"]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(repo, "branch", "--list", "fanout/*") == ""
    assert list(paths["temp"].iterdir()) == []
    assert git(repo, "status", "--porcelain") == ""


async def test_crash_timeout_and_completion_are_each_classified(
    setup: dict[str, Path], git: Git, run_harness: RunHarness, env_for: EnvFor
) -> None:
    """One child completes, one crashes, one hits the deadline: a row each; exit 0."""
    args = ["fanout", "--config", str(setup["config"]), "-a", "writer", "-a", "crasher"]
    args += ["-a", "sleeper", "--timeout", "3", "do it"]
    with anyio.fail_after(90):
        code, out, err = await run_harness(args, cwd=setup["repo"], env=env_for(setup))
    assert code == 0, err
    rows = {line.split("│")[2].strip(): line for line in out.splitlines() if line.count("│") > 5}
    assert set(rows) == {"writer", "crasher", "sleeper"}
    cells = {name: [cell.strip() for cell in row.split("│")[1:-1]] for name, row in rows.items()}
    assert cells["writer"][2:3] + cells["writer"][4:] == [
        "completed",
        "5 / 7",
        "—",
        "1 file +1 −0",
        "—",
    ]
    assert cells["crasher"][2] == "error"
    assert cells["crasher"][7] == CRASH
    assert cells["sleeper"][2] == "aborted (timed out)"
    assert cells["sleeper"][6] == "1 file +1 −0"  # what it wrote before the deadline
    assert "#1 writer: patch " in out
    assert "Traceback" not in err
    assert_nothing_left(git, setup)


async def test_json_carries_usage_per_child(
    setup: dict[str, Path],
    git: Git,
    run_harness: RunHarness,
    env_for: EnvFor,
    read: Callable[[Path], str],
) -> None:
    args = ["fanout", "--config", str(setup["config"]), "-a", "writer", "-a", "crasher"]
    args += ["-a", "sleeper", "--timeout", "3", "--json", "do it"]
    with anyio.fail_after(90):
        code, out, _ = await run_harness(args, cwd=setup["repo"], env=env_for(setup))
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["type"] for r in records] == ["child", "child", "child", "summary"]
    writer, crasher, sleeper, summary = records
    assert writer["usage"] == {
        "input_tokens": 5,
        "output_tokens": 7,
        "cached_input_tokens": None,
        "cost": None,
    }
    assert (writer["stop_reason"], writer["output"], writer["files"]) == (
        "completed",
        "done",
        [{"path": "w.txt", "added": 1, "deleted": 0}],
    )
    assert Path(writer["patch"]).parent.parent == setup["state"] / "fanout"
    assert "+w\n" in read(Path(writer["patch"]))
    assert (crasher["stop_reason"], crasher["diagnostic"], crasher["usage"]) == (
        "error",
        CRASH,
        None,
    )
    assert (sleeper["stop_reason"], sleeper["timed_out"]) == ("aborted", True)
    assert summary == {
        "type": "summary",
        "run": Path(writer["patch"]).parent.name,
        "isolation": "worktree",
        "kept": False,
        "completed": 1,
        "passed": 0,
        "total": 3,
        "report": None,
        "exit_code": 0,
    }
    assert [r["rank"] for r in records[:3]] == [1, 3, 2]  # completed, error, aborted
    assert {r["verify"] for r in records[:3]} == {None}
    assert_nothing_left(git, setup)


async def test_no_child_completing_is_exit_1(
    setup: dict[str, Path], git: Git, run_harness: RunHarness, env_for: EnvFor
) -> None:
    args = ["fanout", "--config", str(setup["config"]), "-a", "crasher", "x"]
    with anyio.fail_after(60):
        code, out, _ = await run_harness(args, cwd=setup["repo"], env=env_for(setup))
    assert code == 1
    assert CRASH in out
    assert_nothing_left(git, setup)


async def test_keep_names_the_worktrees_and_branches(
    setup: dict[str, Path], git: Git, run_harness: RunHarness, env_for: EnvFor
) -> None:
    args = ["fanout", "--config", str(setup["config"]), "-a", "writer", "--keep", "--json", "x"]
    with anyio.fail_after(60):
        code, out, _ = await run_harness(args, cwd=setup["repo"], env=env_for(setup))
    assert code == 0
    child = json.loads(out.splitlines()[0])
    kept = Path(child["isolation_path"])
    assert (kept / "w.txt").read_text(encoding="utf-8") == "w\n"
    listed = git(setup["repo"], "branch", "--format=%(refname:short)", "--list", "fanout/*")
    assert listed.strip() == child["branch"]
    git(setup["repo"], "worktree", "remove", "--force", str(kept))
    git(setup["repo"], "branch", "-q", "-D", child["branch"])


async def test_outside_a_repository_worktree_is_exit_2_with_the_hint(
    setup: dict[str, Path], tmp_path: Path, run_harness: RunHarness, env_for: EnvFor
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "f.txt").write_text("f\n", encoding="utf-8")
    args = ["fanout", "--config", str(setup["config"]), "-a", "writer", "x"]
    with anyio.fail_after(60):
        code, out, err = await run_harness(args, cwd=plain, env=env_for(setup))
        assert (code, out) == (2, "")
        assert err == (
            "harness: worktree isolation needs a git repository; outside one use --isolation copy\n"
        )
        code, out, err = await run_harness(
            [*args[:-1], "--isolation", "copy", "x"], cwd=plain, env=env_for(setup)
        )
    assert code == 0, err
    assert "1 file +1 −0" in out
    assert sorted(p.name for p in plain.iterdir()) == ["f.txt"]
    assert list(setup["temp"].iterdir()) == []


async def test_isolation_none_needs_yes(
    setup: dict[str, Path], run_harness: RunHarness, env_for: EnvFor
) -> None:
    args = ["fanout", "--config", str(setup["config"]), "-a", "writer", "--isolation", "none"]
    with anyio.fail_after(60):
        code, _, err = await run_harness([*args, "x"], cwd=setup["repo"], env=env_for(setup))
        assert code == 2
        assert "pass --yes" in err
        code, _, err = await run_harness(
            [*args, "--yes", "x"], cwd=setup["repo"], env=env_for(setup)
        )
    assert code == 0, err
    assert (setup["repo"] / "w.txt").read_text(encoding="utf-8") == "w\n"  # shared: it is there


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_ctrl_c_cancels_every_child_and_removes_the_worktrees(
    setup: dict[str, Path],
    wait_for_pid: Callable[[Path], Awaitable[int]],
    git: Git,
    env_for: EnvFor,
    open_harness: Callable[..., AbstractAsyncContextManager[ManagedProcess]],
    drain: Callable[[ManagedProcess], Awaitable[tuple[str, str]]],
) -> None:
    """A real SIGINT once both children hold their prompt: exit 130, nothing left."""
    args = ["fanout", "--config", str(setup["config"]), "-a", "sleeper", "-a", "napper", "x"]
    with anyio.fail_after(90):
        async with open_harness(args, cwd=setup["repo"], env=env_for(setup)) as process:
            result: dict[str, tuple[str, str]] = {}
            async with anyio.create_task_group() as tg:

                async def collect() -> None:
                    result["io"] = await drain(process)

                tg.start_soon(collect)
                await wait_for_pid(setup["started"] / "sleeper")
                await wait_for_pid(setup["started"] / "napper")
                os.kill(process.pid, signal.SIGINT)
            outcome = await process.wait()
    text, err = result["io"]
    assert outcome.exit_code == 130, err
    assert text.count("aborted") == 2
    assert "harness: cancelled by signal; every child was stopped and its place removed" in err
    assert "Traceback" not in err
    assert_nothing_left(git, setup)
