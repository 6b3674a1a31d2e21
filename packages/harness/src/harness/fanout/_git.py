"""git as the fan-out runs it: one contained process per command, fixed-text failures.

    run_git(args, cwd=…)        stdout as bytes (or streamed to a file); IsolationError on failure
    git_outcome(args, cwd=…)    the exit code and stdout, for commands whose non-zero exit is
                                an answer (`merge-tree` reports conflicts with 1)
    repository_root(path)       the top of the work tree holding `path`, or None
    snapshot_tree(repo, index)  the tree of what the user sees: HEAD + staged + unstaged +
                                untracked (not ignored), made through a private index
    commit_tree(repo, tree, …)  a commit object no ref points at (fixed identity)

Every command runs through subagent-core's contained process (scrubbed env, no inherited
`GIT_*` variables, stderr discarded: git's words can hold paths and are never shown), so the
user's own index, refs and files are touched only by the commands that mean to.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
from subagent_core import child_env
from subagent_core.kit import SpawnError, open_managed_process

MAX_LISTING_BYTES = 64 * 1024 * 1024
"""Bound on one git listing held in memory (file lists, numstat); a patch streams to disk."""

IDENTITY = {
    "GIT_AUTHOR_NAME": "harness fanout",
    "GIT_AUTHOR_EMAIL": "fanout@harness.invalid",
    "GIT_COMMITTER_NAME": "harness fanout",
    "GIT_COMMITTER_EMAIL": "fanout@harness.invalid",
}
"""The identity of the commits the fan-out makes: fixed, so a user without one can fan out."""


class IsolationError(Exception):
    """Isolation could not be set up or read; the message is fixed text and numbers only."""


class GitMissingError(IsolationError):
    """git is not installed (or not on PATH)."""

    def __init__(self) -> None:
        super().__init__("git is not installed (it is needed to isolate children)")


class NotAGitRepositoryError(IsolationError):
    """`worktree` isolation asked for outside a git repository."""

    def __init__(self) -> None:
        super().__init__(
            "worktree isolation needs a git repository; outside one use --isolation copy"
        )


async def git_outcome(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    output: Path | None = None,
    stdin: bytes | None = None,
) -> tuple[int | None, bytes]:
    """Runs `git ARGS`; returns its exit code (None: killed by a signal) and stdout.

    Raises:
        GitMissingError: git is not installed.
        IsolationError: git printed more than the listing bound.
    """
    explicit: dict[str, str | None] = {name: None for name in os.environ if name.startswith("GIT_")}
    explicit.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    explicit.update(env or {})
    argv = ["git", "-c", "core.quotepath=off", *args]
    data = bytearray()
    too_much = False
    try:
        async with open_managed_process(
            argv,
            cwd=cwd,
            env=child_env(explicit),
            stdin="devnull" if stdin is None else "pipe",
            stderr="devnull",
        ) as process:
            stdout = process.stdout
            assert stdout is not None

            async def read() -> None:
                nonlocal too_much
                if output is not None:
                    async with await anyio.open_file(output, "wb") as sink:
                        async for chunk in stdout:
                            await sink.write(chunk)
                    return
                async for chunk in stdout:
                    data.extend(chunk)
                    if len(data) > MAX_LISTING_BYTES:
                        too_much = True  # raised below, not out of a task group
                        return

            if stdin is None:
                await read()
            else:
                # Fed while stdout is read: git may answer before it has read everything.
                async with anyio.create_task_group() as tg:
                    tg.start_soon(read)
                    assert process.stdin is not None
                    await process.stdin.send(stdin)
                    await process.close_stdin()
            if too_much:
                raise IsolationError(f"git {verb(args)} printed more than the bound")
            outcome = await process.wait()
    except SpawnError:
        raise GitMissingError from None
    return outcome.exit_code, bytes(data)


async def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    output: Path | None = None,
    stdin: bytes | None = None,
) -> bytes:
    """Runs `git ARGS`; returns stdout (or streams it to `output`).

    Raises:
        GitMissingError: git is not installed.
        IsolationError: git failed, or printed more than the listing bound.
    """
    code, data = await git_outcome(args, cwd=cwd, env=env, output=output, stdin=stdin)
    if code != 0:
        raise IsolationError(f"git {verb(args)} failed ({exit_words(code)})")
    return data


def exit_words(code: int | None) -> str:
    """`exit code N`, or `a signal` when git was killed."""
    return f"exit code {code}" if code is not None else "a signal"


def verb(args: Sequence[str]) -> str:
    """The git subcommand in `args` (always our own fixed word), for a fixed-text message."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-C", "--git-dir", "--work-tree", "-c"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return "command"


async def repository_root(path: Path) -> Path | None:
    """The top of the git work tree holding `path`, or None outside a repository.

    Raises:
        IsolationError: git is not installed.
    """
    try:
        out = await run_git(["rev-parse", "--show-toplevel"], cwd=path)
    except GitMissingError:
        raise
    except IsolationError:
        return None
    text = out.decode("utf-8", "surrogateescape").strip()
    return Path(await anyio.Path(text).resolve()) if text else None


async def head_of(repo: Path) -> tuple[str | None, str | None]:
    """HEAD's commit and tree, or `(None, None)` on an unborn branch (no commit yet)."""
    try:
        out = await run_git(["rev-parse", "HEAD", "HEAD^{tree}"], cwd=repo)
    except GitMissingError:
        raise
    except IsolationError:
        return None, None
    lines = out.decode().split()
    return (lines[0], lines[1]) if len(lines) == 2 else (None, None)


async def snapshot_tree(repo: Path, index: Path) -> tuple[str | None, str | None, str]:
    """`(HEAD, HEAD's tree, the tree of what the user sees)`, made through the private `index`.

    A copy of the user's index keeps its stat data, so `add -A` rehashes only what changed and
    the user's own index is never written; `index` is removed afterwards.

    Raises:
        IsolationError: git failed.
    """
    env = {"GIT_INDEX_FILE": str(index)}
    head, head_tree = await head_of(repo)
    listed = await run_git(["rev-parse", "--git-path", "index"], cwd=repo)
    real_index = Path(listed.decode("utf-8", "surrogateescape").strip())
    real_index = real_index if real_index.is_absolute() else repo / real_index
    try:
        if real_index.exists():
            await anyio.to_thread.run_sync(shutil.copyfile, real_index, index)
        else:
            await run_git(["read-tree", head or "--empty"], cwd=repo, env=env)
        await run_git(["add", "-A", "--", "."], cwd=repo, env=env)
        tree = (await run_git(["write-tree"], cwd=repo, env=env)).decode().strip()
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.Path(index).unlink(missing_ok=True)
    return head, head_tree, tree


async def commit_tree(repo: Path, tree: str, parent: str | None, message: str) -> str:
    """A commit of `tree` on `parent` that no ref points at.

    Raises:
        IsolationError: git failed.
    """
    parents = ["-p", parent] if parent is not None else []
    out = await run_git(["commit-tree", tree, *parents, "-m", message], cwd=repo, env=IDENTITY)
    return out.decode().strip()
