"""`harness.fanout.run_fanout` in a real temporary git repository, with scripted fake ACP children.

Each fake child writes its own file (the fake's `markers` knob writes relative to its cwd, which
is its worktree or copy). What must hold: each patch holds exactly its child's change, the
user's tree is untouched, and afterwards no worktree, `fanout/` branch, temporary directory or
process is left (the leak guard checks the processes).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from harness.fanout import FanoutResult, IsolationError, NotAGitRepositoryError, run_fanout
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import CancelSignal, SubagentEvent, SubagentRegistry, SubagentRequest

Git = Callable[..., str]
Writer = Callable[..., ACPProvider]

# Each fan-out's folder (its record) under the test's own state directory.
pytestmark = pytest.mark.usefixtures("state_dir")


@pytest.fixture
def repo(make_repo: Callable[[dict[str, str]], Path]) -> Path:
    """A repository with one commit, an uncommitted edit and an untracked file."""
    path = make_repo({"base.txt": "one\n", ".gitignore": "build/\n*.o\n", "src/lib.txt": "lib\n"})
    (path / "base.txt").write_text("one\ntwo\n", encoding="utf-8")  # uncommitted
    (path / "notes.txt").write_text("untracked\n", encoding="utf-8")
    (path / "build").mkdir()
    (path / "build" / "out.bin").write_text("ignored\n", encoding="utf-8")
    return path


def snapshot(repo: Path) -> dict[str, str]:
    """Every file of the user's tree (outside .git) with its content."""
    return {
        str(path.relative_to(repo)): path.read_text(encoding="utf-8")
        for path in sorted(repo.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(repo).parts
    }


def assert_empty(directory: Path) -> None:
    assert list(directory.iterdir()) == []


def assert_nothing_left(git: Git, repo: Path, temp_root: Path) -> None:
    worktrees = git(repo, "worktree", "list", "--porcelain")
    assert worktrees.count("worktree ") == 1
    assert git(repo, "branch", "--list", "fanout/*") == ""
    assert list(temp_root.iterdir()) == []


async def test_each_patch_holds_exactly_its_childs_change(
    repo: Path, temp_root: Path, tmp_path: Path, git: Git, writer: Writer
) -> None:
    """Three children write different files; each patch is its own; the user's tree is as it was."""
    before_files, before_status = snapshot(repo), git(repo, "status", "--porcelain")
    registry = SubagentRegistry()
    registry.register(writer("adder", {"added.txt": "new\n"}))
    registry.register(writer("editor", {"base.txt": "one\ntwo\nthree\n"}))
    registry.register(writer("nested", {"src/new.txt": "x\ny\n", "skip.o": "ignored\n"}))
    patches = tmp_path / "patches"
    with anyio.fail_after(60):
        async with registry:
            outcomes = await run_fanout(
                registry,
                ["adder", "editor", "nested"],
                SubagentRequest(prompt="work", cwd=repo),
                patch_dir=patches,
            )
    assert [(o.agent, o.result.stop_reason, o.result.output) for o in outcomes] == [
        ("adder", "completed", "adder done"),
        ("editor", "completed", "editor done"),
        ("nested", "completed", "nested done"),
    ]
    by_agent = {o.agent: o for o in outcomes}
    assert [(f.path, f.added, f.deleted) for f in by_agent["adder"].files] == [("added.txt", 1, 0)]
    assert [(f.path, f.added, f.deleted) for f in by_agent["editor"].files] == [("base.txt", 1, 0)]
    assert [(f.path, f.added, f.deleted) for f in by_agent["nested"].files] == [
        ("src/new.txt", 2, 0)
    ]
    for outcome in outcomes:
        assert outcome.patch is not None
        assert outcome.patch.parent == patches
        text = outcome.patch.read_text(encoding="utf-8")
        assert text.count("diff --git ") == 1
    editor_patch = by_agent["editor"].patch
    assert editor_patch is not None
    # The child started from the user's uncommitted tree: its patch applies to it as it is.
    assert " one\n two\n+three\n" in editor_patch.read_text(encoding="utf-8")
    git(repo, "apply", "--check", str(editor_patch))
    assert snapshot(repo) == before_files
    assert git(repo, "status", "--porcelain") == before_status
    for outcome in outcomes:
        assert outcome.isolation_path is not None
        assert not outcome.isolation_path.exists()
    assert_nothing_left(git, repo, temp_root)


async def test_keep_leaves_the_worktrees_and_their_branches(
    repo: Path, temp_root: Path, git: Git, writer: Writer
) -> None:
    registry = SubagentRegistry()
    registry.register(writer("adder", {"added.txt": "new\n"}))
    with anyio.fail_after(60):
        async with registry:
            outcomes = await run_fanout(
                registry,
                ["adder", "adder"],
                SubagentRequest(prompt="work", cwd=repo),
                keep=True,
                patch_dir=repo.parent / "patches",
            )
    branches = git(repo, "branch", "--format=%(refname:short)", "--list", "fanout/*").split()
    assert sorted(branches) == sorted(o.branch for o in outcomes if o.branch)
    assert len(branches) == 2
    for outcome in outcomes:
        assert outcome.isolation_path is not None
        kept = outcome.isolation_path
        assert (kept / "added.txt").read_text(encoding="utf-8") == "new\n"
        assert (kept / "notes.txt").read_text(encoding="utf-8") == "untracked\n"
        assert not (kept / "build").exists()  # ignored files are not carried
        assert not any(p.name.startswith((".index-", ".git-")) for p in kept.parent.iterdir())
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 3
    for outcome in outcomes:
        git(repo, "worktree", "remove", "--force", str(outcome.isolation_path))
    git(repo, "branch", "-q", "-D", *branches)


async def test_concurrency_bounds_how_many_run_at_once(
    repo: Path, temp_root: Path, git: Git, writer: Writer
) -> None:
    order: list[str] = []

    class Recorder:
        def started(self, number: int, agent: str) -> None:
            order.append(f"start {number}")

        def event(self, number: int, event: SubagentEvent) -> None:
            pass

        def finished(self, outcome: FanoutResult) -> None:
            order.append(f"end {outcome.number}")

    registry = SubagentRegistry()
    registry.register(writer("adder", {"added.txt": "new\n"}))
    with anyio.fail_after(60):
        async with registry:
            await run_fanout(
                registry,
                ["adder"] * 3,
                SubagentRequest(prompt="work", cwd=repo),
                concurrency=1,
                patch_dir=repo.parent / "patches",
                observer=Recorder(),
            )
    assert order == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]
    assert_nothing_left(git, repo, temp_root)


async def test_a_crashed_child_still_leaves_nothing(
    repo: Path, temp_root: Path, git: Git, writer: Writer
) -> None:
    """The crash is the child's result; its partial write is its patch; cleanup runs."""
    registry = SubagentRegistry()
    registry.register(
        writer(
            "crasher",
            {"half.txt": "partial\n"},
            crash={"at": "after_prompt_output", "exit_code": 3},
        )
    )
    with anyio.fail_after(60):
        async with registry:
            [outcome] = await run_fanout(
                registry,
                ["crasher"],
                SubagentRequest(prompt="work", cwd=repo),
                patch_dir=repo.parent / "patches",
            )
    assert outcome.result.stop_reason == "error"
    assert outcome.result.diagnostic == (
        "Subagent failure (provider: crasher; stage: process; category: process-exit; exit code: 3)"
    )
    assert [f.path for f in outcome.files] == ["half.txt"]
    assert_nothing_left(git, repo, temp_root)


async def test_a_workspace_inside_the_repository_keeps_its_place(
    repo: Path, temp_root: Path, git: Git, writer: Writer
) -> None:
    """The child's cwd is the same subdirectory of its worktree; paths stay repository-relative."""
    sub = repo / "pkg"
    sub.mkdir()
    registry = SubagentRegistry()
    registry.register(writer("adder", {"here.txt": "x\n"}))
    with anyio.fail_after(60):
        async with registry:
            [outcome] = await run_fanout(
                registry,
                ["adder"],
                SubagentRequest(prompt="work", cwd=sub),  # not in git: no file there yet
                patch_dir=repo.parent / "patches",
            )
    assert [f.path for f in outcome.files] == ["pkg/here.txt"]
    assert not (sub / "here.txt").exists()
    assert_nothing_left(git, repo, temp_root)


async def test_worktree_outside_a_repository_is_refused(
    tmp_path: Path, temp_root: Path, writer: Writer
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    registry = SubagentRegistry()
    registry.register(writer("adder", {"added.txt": "new\n"}))
    with anyio.fail_after(60):
        async with registry:
            with pytest.raises(NotAGitRepositoryError) as raised:
                await run_fanout(registry, ["adder"], SubagentRequest(prompt="w", cwd=plain))
    assert str(raised.value) == (
        "worktree isolation needs a git repository; outside one use --isolation copy"
    )
    assert_empty(temp_root)


async def test_copy_outside_a_repository_works(
    tmp_path: Path, temp_root: Path, writer: Writer
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "keep.txt").write_text("k\n", encoding="utf-8")
    registry = SubagentRegistry()
    registry.register(writer("adder", {"added.txt": "new\n", "keep.txt": "k\nmore\n"}))
    with anyio.fail_after(60):
        async with registry:
            [outcome] = await run_fanout(
                registry,
                ["adder"],
                SubagentRequest(prompt="w", cwd=plain),
                isolation="copy",
                patch_dir=tmp_path / "patches",
            )
    assert outcome.result.stop_reason == "completed"
    assert sorted((f.path, f.added, f.deleted) for f in outcome.files) == [
        ("added.txt", 1, 0),
        ("keep.txt", 1, 0),
    ]
    assert sorted(p.name for p in plain.iterdir()) == ["keep.txt"]
    assert (plain / "keep.txt").read_text(encoding="utf-8") == "k\n"
    assert_empty(temp_root)


async def test_copy_inside_a_repository_respects_gitignore(
    repo: Path, temp_root: Path, git: Git, writer: Writer
) -> None:
    registry = SubagentRegistry()
    registry.register(writer("adder", {"added.txt": "new\n"}))
    with anyio.fail_after(60):
        async with registry:
            [outcome] = await run_fanout(
                registry,
                ["adder"],
                SubagentRequest(prompt="w", cwd=repo),
                isolation="copy",
                keep=True,
                patch_dir=repo.parent / "patches",
            )
    kept = outcome.isolation_path
    assert kept is not None
    assert sorted(p.name for p in kept.iterdir()) == [
        ".gitignore",
        "added.txt",
        "base.txt",
        "notes.txt",
        "src",
    ]
    assert (kept / "base.txt").read_text(encoding="utf-8") == "one\ntwo\n"
    assert [f.path for f in outcome.files] == ["added.txt"]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


async def test_a_repository_without_commits_starts_from_its_files(
    tmp_path: Path, temp_root: Path, git: Git, writer: Writer
) -> None:
    """An unborn branch: the snapshot commit has no parent and holds the untracked files."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    (fresh / "draft.txt").write_text("draft\n", encoding="utf-8")
    registry = SubagentRegistry()
    registry.register(writer("editor", {"draft.txt": "draft\nmore\n"}))
    with anyio.fail_after(60):
        async with registry:
            [outcome] = await run_fanout(
                registry,
                ["editor"],
                SubagentRequest(prompt="w", cwd=fresh),
                patch_dir=tmp_path / "patches",
            )
    assert [(f.path, f.added, f.deleted) for f in outcome.files] == [("draft.txt", 1, 0)]
    assert git(fresh, "status", "--porcelain") == "?? draft.txt\n"
    assert_nothing_left(git, fresh, temp_root)


async def test_a_worktree_git_refuses_fails_the_fan_out_and_removes_the_rest(
    repo: Path, temp_root: Path, git: Git, writer: Writer
) -> None:
    """A branch named `fanout` blocks every `fanout/…` branch: fixed text, nothing left."""
    git(repo, "branch", "fanout")
    registry = SubagentRegistry()
    registry.register(writer("adder", {"added.txt": "new\n"}))
    with anyio.fail_after(60):
        async with registry:
            with pytest.raises(IsolationError) as raised:
                await run_fanout(
                    registry,
                    ["adder", "adder"],
                    SubagentRequest(prompt="w", cwd=repo),
                    patch_dir=repo.parent / "patches",
                )
    assert str(raised.value) == "git worktree failed (exit code 255)"
    assert_nothing_left(git, repo, temp_root)
    git(repo, "branch", "-q", "-D", "fanout")


async def test_a_child_rewriting_its_dot_git_file_cannot_redirect_the_patch(
    repo: Path, temp_root: Path, git: Git, writer: Writer
) -> None:
    """Its changes are read through the git dir fixed at creation, not the `.git` it rewrote."""
    registry = SubagentRegistry()
    registry.register(writer("forger", {".git": "gitdir: /nowhere\n", "mine.txt": "m\n"}))
    with anyio.fail_after(60):
        async with registry:
            [outcome] = await run_fanout(
                registry,
                ["forger"],
                SubagentRequest(prompt="w", cwd=repo),
                patch_dir=repo.parent / "patches",
            )
    assert (outcome.result.stop_reason, outcome.changes_error) == ("completed", None)
    assert [f.path for f in outcome.files] == ["mine.txt"]
    assert_nothing_left(git, repo, temp_root)


async def test_a_cancel_while_places_are_made_starts_no_further_child(
    repo: Path, temp_root: Path, git: Git, writer: Writer
) -> None:
    """Cancelled as the first child starts: it ends aborted; the other never starts.

    Both places are made concurrently, so either child may be the first to start: the test
    names no order, only that exactly one started.
    """
    cancel = CancelSignal()
    started: list[int] = []

    class CancelOnFirstStart:
        def started(self, number: int, agent: str) -> None:
            started.append(number)
            cancel.cancel()

        def event(self, number: int, event: SubagentEvent) -> None:
            pass

        def finished(self, outcome: FanoutResult) -> None:
            pass

    registry = SubagentRegistry()
    registry.register(writer("adder", {"added.txt": "new\n"}, hang_at="prompt"))
    with anyio.fail_after(60):
        async with registry:
            outcomes = await run_fanout(
                registry,
                ["adder", "adder"],
                SubagentRequest(prompt="w", cwd=repo, cancel=cancel),
                patch_dir=repo.parent / "patches",
                observer=CancelOnFirstStart(),
            )
    assert len(started) == 1
    assert [(o.number, o.result.stop_reason) for o in outcomes] == [(1, "aborted"), (2, "aborted")]
    [never] = [o for o in outcomes if o.number not in started]
    assert never.wall_seconds == 0.0
    assert_nothing_left(git, repo, temp_root)


async def test_a_child_that_cannot_start_is_its_own_row(
    repo: Path, temp_root: Path, git: Git, writer: Writer
) -> None:
    registry = SubagentRegistry()
    registry.register(writer("adder", {"added.txt": "new\n"}))
    registry.register(ACPProvider(ACPConfig(provider_name="ghost", command="no-such-agent-xyz")))
    with anyio.fail_after(60):
        async with registry:
            ghost, adder = await run_fanout(
                registry,
                ["ghost", "adder"],
                SubagentRequest(prompt="w", cwd=repo),
                patch_dir=repo.parent / "patches",
            )
    assert (ghost.result.stop_reason, ghost.start_failure, ghost.files) == (
        "error",
        "not-found",
        (),
    )
    assert ghost.result.diagnostic is not None
    assert "no-such-agent-xyz" not in ghost.result.diagnostic
    assert (adder.result.stop_reason, [f.path for f in adder.files]) == ("completed", ["added.txt"])
    assert_nothing_left(git, repo, temp_root)
