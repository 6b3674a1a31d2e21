"""`harness fanout apply`: one child's patch into the user's work tree, whole or not at all.

`git apply --3way` is not used on the user's tree: on git 2.39 it half-applies (conflict
markers, `UU` entries, the patch's other files added) when the conflicting edit is staged or
committed, and its `--check` still says yes. Instead everything is decided on objects first,
and the tree is touched only once the result is certain:

    1 decide (nothing of the user's is written; a Ctrl-C here changes nothing)
        start = the run's start point (a commit)    child = start + the patch (private index)
        what the user has: the work tree (HEAD + staged + unstaged + untracked, made with a
        private index) and the index itself, each as a commit on `start`
        `git merge-tree --write-tree` of each with the child: a conflict in either ─▶ refused
        the merged tree's difference from the work tree = the files to write and delete
        a file git ignores where one is to be added, a path outside the tree ─▶ refused
    2 stage (still nothing of the user's written): the new contents checked out by git
        (`checkout-index --prefix`, so filters and modes apply) into a folder in the git dir,
        each file that will be replaced or deleted hard-linked beside them
    3 commit (synchronous, no await, so no signal handler runs in the middle): one rename
        per file into place, then the deletions; an OS error undoes what was done from the
        links, and the apply is refused with nothing changed

The index, HEAD and refs are never written (like `git apply` without `--index`); the commits
made to decide are objects no ref points at.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Final, Literal

import anyio
from subagent_core import CancelSignal

from ._git import (
    IsolationError,
    commit_tree,
    git_outcome,
    repository_root,
    run_git,
    snapshot_tree,
)
from ._record import RunRecord
from ._result import FanoutResult

STAGING_PREFIX: Final = "harness-fanout-apply-"
"""The staging folder's name in the git dir (removed afterwards, whatever happened)."""

_MESSAGE = "harness fanout apply: a side of the merge that decides the apply"

ChangeKind = Literal["add", "modify", "delete"]


class ApplyRefusedError(Exception):
    """The apply was refused and nothing was changed; the message is fixed text."""


class ApplyInterruptedError(Exception):
    """A signal arrived before the work tree was touched: nothing was changed."""


@dataclass(frozen=True, slots=True)
class _Change:
    kind: ChangeKind
    path: str
    """Repository-relative, as git lists it (child-written: never printed)."""


@dataclass(slots=True)
class Applied:
    """What the apply changed: counts only (the paths are the child's)."""

    added: int = 0
    modified: int = 0
    deleted: int = 0
    interrupted: bool = False
    """A signal arrived while the files were being renamed into place: they all were."""
    changes: list[_Change] = field(default_factory=list[_Change])

    @property
    def total(self) -> int:
        """Files written or deleted."""
        return self.added + self.modified + self.deleted


async def apply_child(
    record: RunRecord, outcome: FanoutResult, workspace: Path, cancel: CancelSignal
) -> Applied:
    """Applies `outcome`'s patch to the work tree holding `workspace`.

    Raises:
        ApplyRefusedError: a conflict, a patch that does not apply, a run of another
            repository, a path in the way; nothing was changed.
        ApplyInterruptedError: `cancel` fired before anything was written.
    """
    if outcome.patch is None:
        raise ApplyRefusedError(f"#{outcome.number} {outcome.agent} changed nothing: no patch")
    if record.base is None or record.repository is None:
        raise ApplyRefusedError(
            f"run {record.run} did not start from a git repository, so it has no start point"
        )
    try:
        repo = await repository_root(workspace)
    except IsolationError as error:
        raise ApplyRefusedError(str(error)) from None
    if repo is None or repo != Path(record.repository):
        raise ApplyRefusedError(f"run {record.run} was made in {record.repository}; apply it there")
    if not await anyio.Path(outcome.patch).is_file():
        raise ApplyRefusedError(f"the patch of #{outcome.number} is gone: {outcome.patch}")
    made = await anyio.to_thread.run_sync(lambda: tempfile.mkdtemp(prefix="harness-apply-"))
    scratch = Path(made)
    staging: Path | None = None
    try:
        with cancel.cancel_scope():
            changes, merged = await _decide(repo, record.base, outcome.patch, scratch)
            if changes:
                staging = await _staging_dir(repo)
                await _stage(repo, scratch / "merged", merged, changes, staging)
        if cancel.cancelled:
            raise ApplyInterruptedError
        if not changes:
            return Applied()
        assert staging is not None
        # From here to the end of `_commit` nothing awaits: a signal is only queued.
        applied = _commit(repo, changes, staging)
        applied.interrupted = cancel.cancelled
        return applied
    except IsolationError as error:
        raise ApplyRefusedError(str(error)) from None
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_remove, scratch)
            if staging is not None:
                await anyio.to_thread.run_sync(_remove, staging)


async def _decide(repo: Path, base: str, patch: Path, scratch: Path) -> tuple[list[_Change], str]:
    """The files to write and delete and the merged tree they come from, or a refusal (step
    1: nothing of the user's is written)."""
    code, _ = await git_outcome(["cat-file", "-e", f"{base}^{{commit}}"], cwd=repo)
    if code != 0:
        raise ApplyRefusedError("the run's start point is no longer in the repository")
    child_env = {"GIT_INDEX_FILE": str(scratch / "child")}
    await run_git(["read-tree", base], cwd=repo, env=child_env)
    code, _ = await git_outcome(
        ["apply", "--cached", "--whitespace=nowarn", str(patch)], cwd=repo, env=child_env
    )
    if code != 0:
        raise ApplyRefusedError("the patch does not apply to the run's start point")
    child_tree = (await run_git(["write-tree"], cwd=repo, env=child_env)).decode().strip()
    child = await commit_tree(repo, child_tree, base, _MESSAGE)
    _, _, work_tree = await snapshot_tree(repo, scratch / "work")
    index_tree = await _index_tree(repo, scratch / "index")
    merged = await _merge(repo, await commit_tree(repo, work_tree, base, _MESSAGE), child)
    if index_tree != work_tree:
        await _merge(repo, await commit_tree(repo, index_tree, base, _MESSAGE), child)
    listing = await run_git(["diff-tree", "-r", "-z", "--no-renames", work_tree, merged], cwd=repo)
    changes = _changes(listing)
    await anyio.to_thread.run_sync(_check_paths, repo, changes)
    return changes, merged


async def _index_tree(repo: Path, copy: Path) -> str:
    """The tree of the user's index as it is (a copy of it written, never the index itself)."""
    listed = await run_git(["rev-parse", "--git-path", "index"], cwd=repo)
    real = Path(listed.decode("utf-8", "surrogateescape").strip())
    real = real if real.is_absolute() else repo / real
    env = {"GIT_INDEX_FILE": str(copy)}
    if await anyio.Path(real).exists():
        await anyio.to_thread.run_sync(shutil.copyfile, real, copy)
    else:
        await run_git(["read-tree", "--empty"], cwd=repo, env=env)
    code, out = await git_outcome(["write-tree"], cwd=repo, env=env)
    if code != 0:
        raise ApplyRefusedError("the index has unresolved conflicts; resolve them first")
    return out.decode().strip()


async def _merge(repo: Path, ours: str, child: str) -> str:
    """The merged tree of `ours` and `child` (both on the start point), or a refusal."""
    code, out = await git_outcome(
        ["merge-tree", "--write-tree", "--no-messages", ours, child], cwd=repo
    )
    if code == 1:
        raise ApplyRefusedError(
            "the patch conflicts with changes in the workspace (unstaged, staged or committed "
            "since the run); nothing was changed"
        )
    if code != 0:
        raise ApplyRefusedError("git merge-tree failed (apply needs git 2.38 or newer)")
    return out.decode().split("\n", 1)[0].strip()


def _changes(listing: bytes) -> list[_Change]:
    """Parses `git diff-tree -r -z`: `:mode mode sha sha STATUS\\0path\\0` per file."""
    fields = listing.decode("utf-8", "surrogateescape").split("\0")
    changes: list[_Change] = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        parts = meta.lstrip(":").split()
        if len(parts) != 5:
            continue
        old_mode, new_mode, status = parts[0], parts[1], parts[4]
        if "160000" in (old_mode, new_mode):
            raise ApplyRefusedError("the patch changes a submodule; apply it with git")
        if status == "A":
            changes.append(_Change("add", path))
        elif status == "D":
            changes.append(_Change("delete", path))
        else:
            changes.append(_Change("modify", path))
    return changes


def _check_paths(repo: Path, changes: list[_Change]) -> None:
    """Refuses a path that leaves the tree, enters `.git`, or would overwrite an ignored file."""
    root = os.path.realpath(repo)
    for change in changes:
        parts = PurePosixPath(change.path).parts
        if not parts or PurePosixPath(change.path).is_absolute() or ".." in parts:
            raise ApplyRefusedError("the patch names a path outside the work tree")
        if any(part.lower() == ".git" for part in parts):
            raise ApplyRefusedError("the patch names a path inside .git")
        target = repo / change.path
        parent = os.path.realpath(target.parent)
        if os.path.commonpath([root, parent]) != root:
            raise ApplyRefusedError("the patch names a path outside the work tree")
        if change.kind == "add" and os.path.lexists(target):
            raise ApplyRefusedError(
                "a file git ignores is where the patch adds one; move it away first"
            )


async def _staging_dir(repo: Path) -> Path:
    """A fresh folder in the git dir: on the work tree's file system, outside its files."""
    listed = await run_git(["rev-parse", "--absolute-git-dir"], cwd=repo)
    git_dir = Path(listed.decode("utf-8", "surrogateescape").strip())
    staging = git_dir / f"{STAGING_PREFIX}{secrets.token_hex(4)}"
    await anyio.Path(staging).mkdir()
    return staging


async def _stage(
    repo: Path, index: Path, merged: str, changes: list[_Change], staging: Path
) -> None:
    """Step 2: the merged contents under `staging/new/` (checked out by git from a private
    index of the merged tree), links to the files they replace under `staging/old/`."""
    written = [change.path for change in changes if change.kind != "delete"]
    if written:
        env = {"GIT_INDEX_FILE": str(index)}
        await run_git(["read-tree", merged], cwd=repo, env=env)
        stdin = b"".join(path.encode("utf-8", "surrogateescape") + b"\0" for path in written)
        await run_git(
            ["checkout-index", f"--prefix={staging / 'new'}/", "-z", "--stdin"],
            cwd=repo,
            env=env,
            stdin=stdin,
        )
    await anyio.to_thread.run_sync(_link_old, repo, changes, staging / "old")


def _link_old(repo: Path, changes: list[_Change], old: Path) -> None:
    """Keeps every file that will be replaced or deleted, by a hard link (else a copy)."""
    for index, change in enumerate(changes):
        if change.kind == "add":
            continue
        keep = old / str(index)
        keep.parent.mkdir(parents=True, exist_ok=True)
        source = repo / change.path
        try:
            os.link(source, keep, follow_symlinks=False)
        except OSError:
            shutil.copy2(source, keep, follow_symlinks=False)


def _commit(repo: Path, changes: list[_Change], staging: Path) -> Applied:
    """Step 3: renames into place (deletions last); on an OS error, undoes and refuses."""
    applied = Applied(changes=changes)
    done: list[tuple[int, _Change]] = []
    made_dirs: list[Path] = []
    removed_dirs: list[Path] = []
    ordered = sorted(enumerate(changes), key=lambda item: item[1].kind == "delete")
    try:
        for index, change in ordered:
            target = repo / change.path
            if change.kind == "delete":
                target.unlink()
                done.append((index, change))
                removed_dirs += _remove_empty_parents(repo, target.parent)
                continue
            made_dirs += _make_parents(repo, target.parent)
            _move(staging / "new" / change.path, target)
            done.append((index, change))
    except OSError:
        _undo(repo, done, staging / "old", made_dirs, removed_dirs)
        raise ApplyRefusedError(
            "the files could not be written (an OS error); nothing was changed"
        ) from None
    for _, change in done:
        if change.kind == "add":
            applied.added += 1
        elif change.kind == "modify":
            applied.modified += 1
        else:
            applied.deleted += 1
    return applied


def _move(source: Path, target: Path) -> None:
    try:
        os.replace(source, target)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        # The git dir is on another file system: copy beside the target, then rename.
        beside = target.with_name(f".{STAGING_PREFIX}{secrets.token_hex(4)}")
        shutil.copy2(source, beside, follow_symlinks=False)
        os.replace(beside, target)


def _make_parents(repo: Path, folder: Path) -> list[Path]:
    made: list[Path] = []
    missing: list[Path] = []
    current = folder
    while current != repo and not current.exists():
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        path.mkdir()
        made.append(path)
    return made


def _remove_empty_parents(repo: Path, folder: Path) -> list[Path]:
    removed: list[Path] = []
    current = folder
    while current != repo:
        try:
            current.rmdir()
        except OSError:
            break
        removed.append(current)
        current = current.parent
    return removed


def _undo(
    repo: Path,
    done: list[tuple[int, _Change]],
    old: Path,
    made_dirs: list[Path],
    removed_dirs: list[Path],
) -> None:
    """Puts back every file `_commit` replaced, added or deleted (best effort, in reverse)."""
    for folder in reversed(removed_dirs):
        folder.mkdir(exist_ok=True)
    for index, change in reversed(done):
        target = repo / change.path
        try:
            if change.kind == "add":
                target.unlink()
            else:
                os.replace(old / str(index), target)
        except OSError:
            continue
    for folder in reversed(made_dirs):
        try:
            folder.rmdir()
        except OSError:
            continue


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
