"""Where each child of a fan-out works: its own git worktree, a temporary copy, or the shared cwd.

    open_isolation(mode, workspace)          one fan-out's places, removed on leaving
      ├─ worktree: snapshot the user's tree  (a commit of HEAD + staged + unstaged + untracked,
      │            made with a private index, so the user's index and files are untouched)
      │   prepare(n) → `git worktree add --no-checkout -b fanout/<run>/<n>-<agent> <tmp>/…
      │                <base>` (one at a time), then `reset --hard <base>` there (concurrently)
      ├─ copy:     prepare(n) → copy the tree into <tmp>/<n>-<agent> (in a repository only the
      │            files git does not ignore), then record it in a private git dir beside it
      └─ none:     prepare(n) → the workspace itself (no patch: the children share it)
    changes(place, patch)                    the child's diff against its base, new files
                                             included, written as a patch; +/− per file

Uncommitted changes travel with the worktree: a child starts from exactly what the user sees
(tracked edits, staged or not, and untracked files that are not ignored), and its patch holds
only what it changed on top. Ignored files (build output, virtual environments) are not carried.

Every git command runs through subagent-core's contained process (scrubbed env, no inherited
`GIT_*` variables, stderr discarded: git's words can hold paths and are never shown). Leaving
the block removes every worktree, branch and temporary directory, shielded and bounded, on
success, failure, cancel and a crashed child alike; with `keep` they stay for the user.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
from subagent_core import child_env
from subagent_core.kit import SpawnError, open_managed_process

IsolationMode = Literal["worktree", "copy", "none"]
ISOLATION_MODES: tuple[IsolationMode, ...] = ("worktree", "copy", "none")

BRANCH_PREFIX = "fanout/"
"""Every branch a fan-out creates starts with this (and is deleted afterwards unless kept)."""

CLEANUP_SECONDS = 60.0
"""Bound on removing every worktree, branch and directory (shielded, so it must end)."""

_MAX_LISTING_BYTES = 64 * 1024 * 1024
"""Bound on one git listing held in memory (file lists, numstat); a patch streams to disk."""

_IDENTITY = {
    "GIT_AUTHOR_NAME": "harness fanout",
    "GIT_AUTHOR_EMAIL": "fanout@harness.invalid",
    "GIT_COMMITTER_NAME": "harness fanout",
    "GIT_COMMITTER_EMAIL": "fanout@harness.invalid",
}
"""The snapshot commit's identity: fixed, so a user without git identity can still fan out."""

_SNAPSHOT_MESSAGE = "harness fanout: the uncommitted changes the fan-out started from"
_LABEL = re.compile(r"[^A-Za-z0-9._-]+")


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


@dataclass(frozen=True, slots=True, kw_only=True)
class FileChange:
    """One file a child changed, as `git diff --numstat` counts it."""

    path: str
    """Relative to the repository (or copy) root. Written by the child: show, never trust."""
    added: int | None
    """Lines added; None for a binary file."""
    deleted: int | None
    """Lines deleted; None for a binary file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """Where one child works."""

    cwd: Path
    """The child's cwd: the isolation root plus the workspace's path inside the repository."""
    root: Path
    """The worktree or copy (the workspace itself for `none`)."""
    branch: str | None = None
    """The worktree's branch."""
    base: str | None = None
    """The commit or tree the child's patch is taken against (None: no patch, for `none`)."""
    git_args: tuple[str, ...] = ()
    """How git addresses this place: its git dir (the worktree's, or the copy's private one)
    and work tree, fixed when the place was made."""
    index: Path | None = None
    """A private index for reading the child's changes (None: the place's own index)."""


async def _git(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    output: Path | None = None,
) -> bytes:
    """Runs `git ARGS`; returns stdout (or streams it to `output`).

    Raises:
        GitMissingError: git is not installed.
        IsolationError: git failed, or printed more than the listing bound.
    """
    explicit: dict[str, str | None] = {name: None for name in os.environ if name.startswith("GIT_")}
    explicit.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    explicit.update(env or {})
    argv = ["git", "-c", "core.quotepath=off", *args]
    data = bytearray()
    try:
        async with open_managed_process(
            argv, cwd=cwd, env=child_env(explicit), stdin="devnull", stderr="devnull"
        ) as process:
            assert process.stdout is not None
            if output is not None:
                async with await anyio.open_file(output, "wb") as sink:
                    async for chunk in process.stdout:
                        await sink.write(chunk)
            else:
                async for chunk in process.stdout:
                    data.extend(chunk)
                    if len(data) > _MAX_LISTING_BYTES:
                        raise IsolationError(f"git {args[0]} printed more than the bound")
            outcome = await process.wait()
    except SpawnError:
        raise GitMissingError from None
    if outcome.exit_code != 0:
        code = f"exit code {outcome.exit_code}" if outcome.exit_code is not None else "a signal"
        raise IsolationError(f"git {_verb(args)} failed ({code})")
    return bytes(data)


def _verb(args: Sequence[str]) -> str:
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
        out = await _git(["rev-parse", "--show-toplevel"], cwd=path)
    except GitMissingError:
        raise
    except IsolationError:
        return None
    text = out.decode("utf-8", "surrogateescape").strip()
    return Path(await anyio.Path(text).resolve()) if text else None


def branch_label(agent: str) -> str:
    """`agent` as a safe ref and directory component (the agent name is configuration)."""
    label = _LABEL.sub("-", agent).strip(".-") or "agent"
    return label[:40]


class Isolation:
    """One fan-out's places; built by `open_isolation`, which removes them afterwards."""

    def __init__(
        self, mode: IsolationMode, workspace: Path, root: Path | None, temp: Path | None
    ) -> None:
        self.mode: IsolationMode = mode
        self.workspace = workspace
        self.repository = root
        """The repository holding the workspace (None outside one)."""
        self.temp = temp
        """The temporary directory every worktree and copy lives in (None for `none`)."""
        self.run_id = secrets.token_hex(4)
        self.places: list[Place] = []
        self._base: str | None = None
        self._lock = anyio.Lock()

    @property
    def relative(self) -> Path:
        """The workspace's path inside its repository (`.` outside one)."""
        if self.repository is None:
            return Path()
        return self.workspace.relative_to(self.repository)

    async def prepare(self, number: int, agent: str) -> Place:
        """The place of child `number` (1-based), made now.

        Raises:
            IsolationError: git failed or the copy could not be made.
        """
        if self.mode == "none":
            place = Place(cwd=self.workspace, root=self.workspace)
            self.places.append(place)
            return place
        assert self.temp is not None
        name = f"{number}-{branch_label(agent)}"
        target = self.temp / name
        # Commands on the shared repository run one at a time: concurrent `git worktree add`s
        # trip over each other's half-made entries (measured: 9 of 48 failed, 16 at once).
        # The checkout itself, each worktree's own index and files, runs outside the lock.
        async with self._lock:
            if self.mode == "worktree":
                place = await self._add_worktree(target, name)
            else:
                place = await self._copy(target, name)
            self.places.append(place)
        if self.mode == "worktree":
            await _check_out(place)
        # The workspace may be a directory git does not record (empty, or not yet added).
        await anyio.Path(place.cwd).mkdir(parents=True, exist_ok=True)
        return place

    async def _snapshot(self) -> str:
        """The commit every worktree starts from: HEAD, or HEAD plus the uncommitted changes."""
        if self._base is not None:
            return self._base
        assert self.repository is not None
        assert self.temp is not None
        repo = self.repository
        index = self.temp / ".index-base"
        env = {"GIT_INDEX_FILE": str(index)}
        head, head_tree = await self._head()
        listed = await _git(["rev-parse", "--git-path", "index"], cwd=repo)
        real_index = Path(listed.decode("utf-8", "surrogateescape").strip())
        real_index = real_index if real_index.is_absolute() else repo / real_index
        if real_index.exists():
            # A copy of the user's index keeps its stat data: `add -A` then rehashes only
            # what changed, and the user's own index is never written.
            await anyio.to_thread.run_sync(shutil.copyfile, real_index, index)
        else:
            await _git(["read-tree", head or "--empty"], cwd=repo, env=env)
        await _git(["add", "-A", "--", "."], cwd=repo, env=env)
        tree = (await _git(["write-tree"], cwd=repo, env=env)).decode().strip()
        index.unlink(missing_ok=True)
        if head is not None and head_tree == tree:
            self._base = head
            return head
        parents = ["-p", head] if head is not None else []
        commit = await _git(
            ["commit-tree", tree, *parents, "-m", _SNAPSHOT_MESSAGE], cwd=repo, env=_IDENTITY
        )
        self._base = commit.decode().strip()
        return self._base

    async def _head(self) -> tuple[str | None, str | None]:
        """HEAD's commit and tree, or `(None, None)` on an unborn branch (no commit yet)."""
        assert self.repository is not None
        try:
            out = await _git(["rev-parse", "HEAD", "HEAD^{tree}"], cwd=self.repository)
        except IsolationError:
            return None, None
        lines = out.decode().split()
        return (lines[0], lines[1]) if len(lines) == 2 else (None, None)

    async def _add_worktree(self, target: Path, name: str) -> Place:
        assert self.repository is not None
        assert self.temp is not None
        base = await self._snapshot()
        branch = f"{BRANCH_PREFIX}{self.run_id}/{name}"
        index = self.temp / f".index-{name}"
        await _git(
            ["worktree", "add", "-q", "--no-checkout", "-b", branch, str(target), base],
            cwd=self.repository,
        )
        admin = await anyio.to_thread.run_sync(_worktree_admin, target)
        if admin is None:
            raise IsolationError("git worktree made an unexpected layout")
        return Place(
            cwd=target / self.relative,
            root=target,
            branch=branch,
            base=base,
            # The git dir as it was made, not as the worktree's `.git` file (which the child
            # can rewrite) says later.
            git_args=("--git-dir", str(admin), "--work-tree", str(target)),
            index=index,
        )

    async def _copy(self, target: Path, name: str) -> Place:
        assert self.temp is not None
        if self.repository is not None:
            listing = await _git(
                ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                cwd=self.repository,
            )
            names = listing.decode("utf-8", "surrogateescape").split("\0")
            await anyio.to_thread.run_sync(_copy_listed, self.repository, target, names)
            cwd = target / self.relative
        else:
            await anyio.to_thread.run_sync(_copy_tree, self.workspace, target)
            cwd = target
        git_dir = self.temp / f".git-{name}"
        git_args = ("--git-dir", str(git_dir), "--work-tree", str(target))
        await _git(["init", "-q", "--bare", str(git_dir)], cwd=self.temp)
        await _git([*git_args, "add", "-A", "--", "."], cwd=target)
        tree = (await _git([*git_args, "write-tree"], cwd=target)).decode().strip()
        return Place(cwd=cwd, root=target, base=tree, git_args=git_args)

    async def cleanup(self, *, keep: bool) -> None:
        """Removes every worktree, `fanout/` branch and the temporary directory (unless `keep`).

        Private indexes and git dirs of copies go even when kept; a failure of one step does
        not skip the others.
        """
        if self.temp is None:
            return
        temp = self.temp
        await anyio.to_thread.run_sync(_remove_private, temp)
        if keep:
            return
        for place in self.places:
            await anyio.to_thread.run_sync(_remove_tree, place.root)
        if self.mode == "worktree" and self.repository is not None:
            # Every branch of this run, as git lists them: a `worktree add` that failed half
            # way may have made its branch without this object hearing of it.
            prefix = f"refs/heads/{BRANCH_PREFIX}{self.run_id}/"
            try:
                await _git(["worktree", "prune"], cwd=self.repository)
                listed = await _git(
                    ["for-each-ref", "--format=%(refname:short)", prefix], cwd=self.repository
                )
                branches = listed.decode("utf-8", "surrogateescape").split()
                if branches:
                    await _git(["branch", "-q", "-D", *branches], cwd=self.repository)
            except IsolationError:
                pass  # best effort: the worktrees' files are gone already
        await anyio.to_thread.run_sync(_remove_tree, temp)


async def _check_out(place: Place) -> None:
    """Fills a worktree added without a checkout, then keeps a copy of its fresh index."""
    assert place.base is not None
    assert place.index is not None
    await _git([*place.git_args, "reset", "-q", "--hard", place.base], cwd=place.root)
    git_dir = Path(place.git_args[1])
    await anyio.to_thread.run_sync(_copy_index, git_dir / "index", place.index)


async def changes(place: Place, patch: Path | None) -> tuple[FileChange, ...]:
    """What the child changed against its base (new files included), written to `patch`.

    No file is written when nothing changed. Reads through a private index, so the place's
    own index (which the child may use) is left as the child left it.

    Raises:
        IsolationError: git failed.
    """
    if place.base is None:
        return ()
    env: dict[str, str] = {}
    if place.index is not None:
        env["GIT_INDEX_FILE"] = str(place.index)
        if not await anyio.Path(place.index).exists():
            await _git([*place.git_args, "read-tree", place.base], cwd=place.root, env=env)
    await _git([*place.git_args, "add", "-A", "--", "."], cwd=place.root, env=env)
    diff = [*place.git_args, "diff", "--cached", "--no-renames", "--no-color", place.base]
    listing = await _git([*diff, "--numstat", "-z"], cwd=place.root, env=env)
    files = _numstat(listing)
    if files and patch is not None:
        await _git([*diff, "--binary", "--full-index"], cwd=place.root, env=env, output=patch)
    if place.index is not None:
        place.index.unlink(missing_ok=True)
    return files


def _numstat(listing: bytes) -> tuple[FileChange, ...]:
    """Parses `git diff --numstat -z --no-renames`: `added\\tdeleted\\tpath\\0` per file."""
    files: list[FileChange] = []
    for record in listing.decode("utf-8", "surrogateescape").split("\0"):
        parts = record.split("\t", 2)
        if len(parts) != 3:
            continue
        added, deleted, path = parts
        files.append(
            FileChange(
                path=path,
                added=int(added) if added.isdigit() else None,
                deleted=int(deleted) if deleted.isdigit() else None,
            )
        )
    return tuple(files)


def _copy_listed(source: Path, target: Path, names: list[str]) -> None:
    """Copies the listed files (git's view of the tree), keeping symlinks as links."""
    target.mkdir(parents=True)
    for name in names:
        if not name:
            continue
        origin = source / name
        if not origin.is_symlink() and not origin.is_file():
            continue  # deleted but still tracked, or a submodule
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_symlink():
            destination.symlink_to(os.readlink(origin))
        else:
            shutil.copy2(origin, destination)


def _worktree_admin(target: Path) -> Path | None:
    """A fresh worktree's git dir (`.git/worktrees/<name>`), read from its `.git` file.

    Read right after `git worktree add`, before the child runs, so the file is still git's.
    """
    try:
        text = (target / ".git").read_text("utf-8").strip()
    except OSError:
        return None
    if not text.startswith("gitdir: "):
        return None
    admin = Path(text.removeprefix("gitdir: "))
    return admin if admin.is_absolute() else target / admin


def _copy_index(source: Path, index: Path) -> None:
    """Copies a fresh worktree's index (stat data of its checkout) to the private `index`.

    With the stat data `add -A` later rehashes only what the child touched; without a copy
    `changes` builds the index from the base instead.
    """
    try:
        shutil.copyfile(source, index)
    except OSError:
        index.unlink(missing_ok=True)


def _copy_tree(source: Path, target: Path) -> None:
    shutil.copytree(source, target, symlinks=True)


def _remove_private(temp: Path) -> None:
    """Removes the private indexes and git dirs of a temporary root (kept or not)."""
    if not temp.is_dir():
        return
    for entry in temp.iterdir():
        if entry.name.startswith((".index-", ".git-")):
            _remove_tree(entry)


def _remove_tree(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@asynccontextmanager
async def open_isolation(
    mode: IsolationMode, workspace: Path, *, keep: bool
) -> AsyncGenerator[Isolation]:
    """One fan-out's isolation; leaving the block removes everything it made (unless `keep`).

    Raises:
        NotAGitRepositoryError: `worktree` outside a git repository.
        IsolationError: git is not installed (for `worktree` and `copy`).
    """
    if mode == "none":
        yield Isolation(mode, workspace, None, None)
        return
    root = await repository_root(workspace)
    if root is None and mode == "worktree":
        raise NotAGitRepositoryError
    made = await anyio.to_thread.run_sync(lambda: tempfile.mkdtemp(prefix="harness-fanout-"))
    temp = Path(await anyio.Path(made).resolve())
    isolation = Isolation(mode, workspace, root, temp)
    try:
        yield isolation
    finally:
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            await isolation.cleanup(keep=keep)
