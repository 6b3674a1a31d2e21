"""Every place on disk the harness itself chooses: the state directory and what lives in it.

```
HARNESS_STATE_DIR, else the XDG state dir (~/.local/state/harness): state_dir()
├── sessions/         the sessions `delegate --session NAME` keeps      sessions_root()
├── child-stderr/     each command's children's stderr logs             child_stderr_root()
├── fanout/<run>/     a fan-out's record, verify logs, patches, report  fanout_run_dir()
└── (the servers' stored conversations, or under their --state-dir)     default_state_dir()
```

Also the workspace a command works in (`--workspace`, else the current directory).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from harness._console.exit_codes import UsageError

STATE_DIR_ENV: Final = "HARNESS_STATE_DIR"
"""The variable that moves the whole state directory (tests and CI set it)."""
SESSIONS_DIR: Final = "sessions"
"""The folder under the state directory that holds every kept session."""
CHILD_STDERR_DIR: Final = "child-stderr"
"""The children's stderr logs' folder under the state directory."""
FANOUT_DIR: Final = "fanout"
"""The folder under the state directory that holds every fan-out's own folder."""


def default_state_dir() -> Path:
    """The user's XDG state directory for the harness (`~/.local/state/harness` on Linux)."""
    from platformdirs import user_state_path

    return user_state_path("harness", appauthor=False)


def state_dir() -> Path:
    """`HARNESS_STATE_DIR` when set, else the user's XDG state directory for the harness."""
    configured = os.environ.get(STATE_DIR_ENV)
    if configured:
        return Path(configured)
    return default_state_dir()


def sessions_root() -> Path:
    """Where kept sessions live: `sessions/` under the harness state directory."""
    return state_dir() / SESSIONS_DIR


def child_stderr_root() -> Path:
    """Where the children's stderr logs go: `child-stderr/` under the state directory."""
    return state_dir() / CHILD_STDERR_DIR


def fanout_runs_root() -> Path:
    """Where every fan-out's folder lives: `fanout/` under the state directory."""
    return state_dir() / FANOUT_DIR


def fanout_run_dir(run_id: str) -> Path:
    """One fan-out's folder (its record, verify logs and, by default, its patches)."""
    return fanout_runs_root() / run_id


def workspace_path(workspace: Path | None) -> Path:
    """The workspace as an absolute path (the current directory when not given).

    Raises:
        UsageError: the directory does not exist or cannot be entered and read.
    """
    path = (workspace or Path.cwd()).resolve()
    if not path.is_dir() or not os.access(path, os.R_OK | os.X_OK):
        raise UsageError(f"the workspace is not accessible: {path}")
    return path
