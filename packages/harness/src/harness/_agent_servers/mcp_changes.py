"""How many files of the workspace a `delegate` call changed, read from git (a count, no paths).

Before the child starts and after it is gone, the tree of what the repository holds (HEAD,
staged, unstaged and untracked files that are not ignored) is written through a private index,
as the fan-out snapshots a workspace (`harness.fanout._git.snapshot_tree`); the count is the
number of paths under the workspace that differ between the two trees. A path is the child's
text, so only the number leaves this module. Outside a git repository (or when git fails) the
count is unknown: None, and no git process runs when no `.git` is found above the workspace.
Changes another process made meanwhile count too: the workspace is not isolated.
"""

from __future__ import annotations

import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.fanout._git import IsolationError, repository_root, run_git, snapshot_tree

_DIFF_TREE = ("diff-tree", "-r", "--no-renames", "--name-only", "-z")


@dataclass(frozen=True, slots=True)
class Tree:
    """The repository holding a workspace and a tree object of its state at one moment."""

    repository: Path
    tree: str


def _in_git_repository(workspace: Path) -> bool:
    return any((folder / ".git").exists() for folder in (workspace, *workspace.parents))


async def workspace_tree(workspace: Path) -> Tree | None:
    """The state of `workspace`'s repository as a tree object, or None outside one."""
    if not _in_git_repository(workspace):
        return None
    index = Path(tempfile.gettempdir()) / f"harness-mcp-index-{secrets.token_hex(8)}"
    try:
        repository = await repository_root(workspace)
        if repository is None:
            return None
        _, _, tree = await snapshot_tree(repository, index)
    except IsolationError:
        return None
    finally:
        index.unlink(missing_ok=True)
    return Tree(repository, tree)


async def files_changed(before: Tree | None, workspace: Path) -> int | None:
    """How many files under `workspace` differ from `before` now (None when unknown)."""
    if before is None:
        return None
    after = await workspace_tree(workspace)
    if after is None or after.repository != before.repository:
        return None
    if after.tree == before.tree:
        return 0
    scope = workspace.relative_to(before.repository).as_posix() or "."
    try:
        listing = await run_git(
            [*_DIFF_TREE, before.tree, after.tree, "--", scope],
            cwd=before.repository,
        )
    except IsolationError:
        return None
    return sum(1 for name in listing.split(b"\0") if name)
