"""Confinement of model-given paths to the workspace, by realpath.

This keeps tool calls in the project; it is not a sandbox (a command run by `process_execute`
still has the user's permissions).
"""

from __future__ import annotations

import os
from pathlib import Path


class PathRejected(Exception):
    """A model-given path is not allowed; `str(e)` is fixed text the model may see."""


def resolve_inside(root: Path, relative: str) -> Path:
    """`relative` resolved under the real workspace `root`, refusing any way out.

    Refuses absolute paths, drive or UNC prefixes, any `..` component, and a path whose
    realpath (symlinks followed) leaves `root`. The target need not exist.

    Raises:
        PathRejected: the path is not allowed.
    """
    if not relative:
        raise PathRejected("path must not be empty")
    if "\x00" in relative:
        raise PathRejected("path must not contain NUL characters")
    normalized = relative.replace("\\", "/")
    if (
        os.path.isabs(relative)
        or normalized.startswith("/")
        or (len(normalized) > 1 and normalized[1] == ":")
    ):
        raise PathRejected("path must be relative to the workspace")
    if any(part == ".." for part in normalized.split("/")):
        raise PathRejected("path must not contain '..'")
    real_root = os.path.realpath(root)
    target = os.path.realpath(os.path.join(real_root, *[p for p in normalized.split("/") if p]))
    if not _within(real_root, target):
        raise PathRejected("path leaves the workspace")
    return Path(target)


def _within(root: str, target: str) -> bool:
    try:
        return os.path.commonpath([root, target]) == root
    except ValueError:
        return False


def relative_name(root: Path, path: Path) -> str:
    """`path` relative to `root`, with `/` separators (what the model sees)."""
    return path.relative_to(root).as_posix()
