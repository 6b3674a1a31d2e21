"""Where a child works, and the checks every provider makes before it spawns anything.

A provider's `start()` opens the same way everywhere: a request already cancelled is refused
with the fixed aborted text before any process exists, and the workspace (the provider's
configured cwd, else the request's) must be an absolute directory this process can enter, or
the start fails as `initialize` / `configuration`. Both live here once.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ._diagnostics import failure_line
from ._errors import (
    ChildKind,
    SubagentStartError,
    aborted_before_start_text,
    compose_start_error,
)
from ._types import SubagentRequest


def enterable_directory(path: Path) -> bool:
    """True when `path` is a directory this process may enter (`X_OK`)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode) and os.access(path, os.X_OK)
    except (OSError, ValueError):
        return False


def choose_workspace(configured: Path | None, requested: object) -> Path | None:
    """The configured cwd, else the request's; `None` unless it is absolute and enterable."""
    if configured is not None:
        path = configured
    else:
        if not isinstance(requested, str | Path) or str(requested) == "":
            return None
        path = Path(requested)
        if not path.is_absolute():
            return None
    return path if enterable_directory(path) else None


def configuration_start_error(kind: ChildKind, provider: str) -> SubagentStartError:
    """The start error of a request the provider cannot serve as configured (no child ran)."""
    line = failure_line(provider, "initialize", "configuration")
    return compose_start_error(kind, cancelled=False, startup_line=line, cleanup_line=None)


def start_preamble(
    kind: ChildKind, provider: str, request: SubagentRequest, configured_cwd: Path | None
) -> Path:
    """The checks before a spawn; returns the child's workspace.

    Raises:
        SubagentStartError: the request was cancelled already (the fixed aborted text), or no
            usable workspace (`stage: initialize; category: configuration`).
    """
    if request.cancel.cancelled:
        raise SubagentStartError(aborted_before_start_text(kind))
    cwd = choose_workspace(configured_cwd, request.cwd)
    if cwd is None:
        raise configuration_start_error(kind, provider)
    return cwd
