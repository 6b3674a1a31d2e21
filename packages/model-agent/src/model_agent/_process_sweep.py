"""Finding a call's escaped descendants by an inherited environment marker (Linux).

The managed process tracks its tree through the process group and parent links, but a
grandchild that called `setsid` and was orphaned before a snapshot saw it has neither. Every
process a call starts inherits `MODEL_AGENT_CALL=<id>`, so when such a grandchild still holds
the call's pipes it can be found and killed: it belongs to this call and to nothing else.
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
