"""Kept sessions: `harness delegate --session NAME` keeps one child conversation per name.

Each CLI call is its own process, so every turn after the first is a cold resume: the session
is kept by core's store under `sessions/` in the harness state directory (one folder per
handle: the record, the child's own per-handle state, the lock), and the name is the record's
label. The handle stays ours; the child's own session id never leaves the record.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Final

from subagent_core import SessionRecord, list_records
from subagent_core.kit import SessionBusyError, SessionSlot

from harness._config.paths import sessions_root
from harness._console.exit_codes import EXIT_OK, UsageError

from .kept_sessions_view import print_sessions

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_SECONDS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def check_name(name: str) -> str:
    """A session name: 1-64 letters, digits, `.`, `_` or `-`, starting with a letter or digit.

    Raises:
        UsageError: the name is not one.
    """
    if _NAME.fullmatch(name) is None:
        raise UsageError(
            "--session takes 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


def find_session(root: Path, name: str) -> SessionRecord | None:
    """The kept session called `name` (the most recently used one), if any."""
    for record in list_records(root):
        if record.label == name:
            return record
    return None


def parse_age(text: str) -> float:
    """`7d`, `12h`, `30m`, `90s`, `2w` → seconds.

    Raises:
        UsageError: not such a duration.
    """
    match = _AGE.fullmatch(text.strip())
    if match is None:
        raise UsageError("--older-than takes a number and a unit: s, m, h, d or w (e.g. 7d)")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def remove_session(root: Path, record: SessionRecord) -> bool:
    """Deletes a kept session (its record and the child's own state); False while it is in
    use by a live session (its lock is held)."""
    slot = SessionSlot(record.handle, root / record.handle, record)
    try:
        slot.lock()
    except (SessionBusyError, OSError):
        return False
    slot.discard()
    return True


def prune(root: Path, older_than_seconds: float) -> list[SessionRecord]:
    """Deletes the sessions last used longer ago than the bound; returns those deleted."""
    cutoff = time.time() - older_than_seconds
    return [
        record
        for record in list_records(root)
        if record.last_used < cutoff and remove_session(root, record)
    ]


def sessions_command(*, json: bool) -> int:
    """`harness sessions`: the kept sessions, most recently used first; exit 0."""
    print_sessions(sessions_root(), json=json)
    return EXIT_OK


def close_command(name: str) -> int:
    """`harness sessions close NAME`: deletes the kept session and says so; exit 0.

    Raises:
        UsageError: a bad name, no such session, or one a running delegate holds.
    """
    root = sessions_root()
    record = find_session(root, check_name(name))
    if record is None:
        raise UsageError(f"no session named {name}")
    if not remove_session(root, record):
        raise UsageError(f"session {name} is in use by a running delegate; try again after it")
    _out(f"closed session {name}")
    return EXIT_OK


def prune_command(older_than: str) -> int:
    """`harness sessions prune --older-than AGE`: deletes the stale sessions, names them; 0.

    Raises:
        UsageError: AGE is not a duration.
    """
    removed = prune(sessions_root(), parse_age(older_than))
    names = ", ".join(record.label or record.handle for record in removed)
    _out(f"pruned {len(removed)} session(s)" + (f": {names}" if names else ""))
    return EXIT_OK


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
