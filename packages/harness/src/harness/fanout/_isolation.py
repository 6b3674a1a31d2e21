"""Where each child of a fan-out works: its own git worktree, a temporary copy, or the shared cwd.

    open_isolation(mode, workspace)          one fan-out's places, removed on leaving
      start_point(): snapshot the user's tree (a commit of HEAD + staged + unstaged + untracked,
                   made with a private index, so the user's index and files are untouched;
                   in a repository for `copy` too, so `apply` can merge against it)
      ├─ worktree: every worktree starts at the start point
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

Every git command runs through `_git` (subagent-core's contained process: scrubbed env, no
inherited `GIT_*` variables, stderr discarded: git's words can hold paths). Leaving
the block removes every worktree, branch and temporary directory, shielded and bounded, on
success, failure, cancel and a crashed child alike; with `keep` they stay for the user.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio

from ._git import (
    IsolationError,
    NotAGitRepositoryError,
    commit_tree,
    repository_root,
    run_git,
    snapshot_tree,
)

IsolationMode = Literal["worktree", "copy", "none"]
ISOLATION_MODES: tuple[IsolationMode, ...] = ("worktree", "copy", "none")

BRANCH_PREFIX = "fanout/"
"""Every branch a fan-out creates starts with this (and is deleted afterwards unless kept)."""

CLEANUP_SECONDS = 60.0
"""Bound on removing every worktree, branch and directory (shielded, so it must end)."""

_SNAPSHOT_MESSAGE = "harness fanout: the uncommitted changes the fan-out started from"
_LABEL = re.compile(r"[^A-Za-z0-9._-]+")


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
        self.head: str | None = None
        """HEAD when the start point was made (None before, and on an unborn branch)."""
        self._base: str | None = None
        self._lock = anyio.Lock()
        self._base_lock = anyio.Lock()

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

    async def start_point(self) -> str | None:
        """The commit every child starts from: HEAD, or HEAD plus the uncommitted changes.

        None outside a repository and for `none`. Made once, without touching the user's
        index, files or refs (a commit no ref points at, parent HEAD, fixed identity).

        Raises:
            IsolationError: git failed.
        """
        if self.repository is None or self.temp is None:
            return None
        async with self._base_lock:
            if self._base is None:
                head, head_tree, tree = await snapshot_tree(
                    self.repository, self.temp / ".index-base"
                )
                self.head = head
                if head is not None and head_tree == tree:
                    self._base = head
                else:
                    self._base = await commit_tree(self.repository, tree, head, _SNAPSHOT_MESSAGE)
            return self._base

    async def _add_worktree(self, target: Path, name: str) -> Place:
        assert self.repository is not None
        assert self.temp is not None
        base = await self.start_point()
        assert base is not None
        branch = f"{BRANCH_PREFIX}{self.run_id}/{name}"
        index = self.temp / f".index-{name}"
        await run_git(
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
            listing = await run_git(
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
        await run_git(["init", "-q", "--bare", str(git_dir)], cwd=self.temp)
        await run_git([*git_args, "add", "-A", "--", "."], cwd=target)
        tree = (await run_git([*git_args, "write-tree"], cwd=target)).decode().strip()
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
                await run_git(["worktree", "prune"], cwd=self.repository)
                listed = await run_git(
                    ["for-each-ref", "--format=%(refname:short)", prefix], cwd=self.repository
                )
                branches = listed.decode("utf-8", "surrogateescape").split()
                if branches:
                    await run_git(["branch", "-q", "-D", *branches], cwd=self.repository)
            except IsolationError:
                pass  # best effort: the worktrees' files are gone already
        await anyio.to_thread.run_sync(_remove_tree, temp)


async def _check_out(place: Place) -> None:
    """Fills a worktree added without a checkout, then keeps a copy of its fresh index."""
    assert place.base is not None
    assert place.index is not None
    await run_git([*place.git_args, "reset", "-q", "--hard", place.base], cwd=place.root)
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
            await run_git([*place.git_args, "read-tree", place.base], cwd=place.root, env=env)
    await run_git([*place.git_args, "add", "-A", "--", "."], cwd=place.root, env=env)
    diff = [*place.git_args, "diff", "--cached", "--no-renames", "--no-color", place.base]
    listing = await run_git([*diff, "--numstat", "-z"], cwd=place.root, env=env)
    files = _numstat(listing)
    if files and patch is not None:
        await run_git([*diff, "--binary", "--full-index"], cwd=place.root, env=env, output=patch)
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
