"""Finding a call's escaped descendants by an inherited environment marker (Linux).

The managed process tracks its tree through the process group and parent links, but a
grandchild that called `setsid` and was orphaned before a snapshot saw it has neither. Every
process a call starts inherits `MODEL_AGENT_CALL=<id>`, so once the known tree is gone a sweep
finds and kills such a grandchild (holding the call's pipes or not): it belongs to this call
and to nothing else. A process that clears its own environment is not found (not a sandbox).
"""

from __future__ import annotations

import os
import sys
import uuid

MARKER_VARIABLE = "MODEL_AGENT_CALL"
"""The environment name every process of a `process_execute` call inherits."""


def new_marker() -> str:
    """A fresh marker value for one call."""
    return uuid.uuid4().hex


def kill_marked(marker: str) -> int:
    """SIGKILLs every live process of this user whose environment carries `marker`.

    Returns how many were signalled. Linux only (reads `/proc/<pid>/environ`); elsewhere 0.
    """
    if not sys.platform.startswith("linux"):
        return 0
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    own = os.getpid()
    killed = 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == own:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                entries = environ.read().split(b"\0")
        except OSError:
            continue
        if needle in entries:
            try:
                os.kill(int(name), 9)
                killed += 1
            except OSError:
                continue
    return killed


SWEEP_PASSES = 3
"""Sweeps in a row while the previous one still found someone (a forking escapee)."""


def sweep_marked(marker: str) -> int:
    """Kills every marked process, again while a pass found one (bounded); returns the count."""
    total = 0
    for _ in range(SWEEP_PASSES):
        killed = kill_marked(marker)
        total += killed
        if killed == 0:
            break
    return total
