"""Which shell runs `process_execute` commands, found once per runtime and frozen per request.

POSIX looks for `/bin/bash`, then `/bin/sh`; Windows for `pwsh`, then `powershell.exe` on PATH.
When none exists the tool is not registered, and `missing_shell_diagnostic` says what was tried.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence

POSIX_SHELLS: tuple[str, ...] = ("/bin/bash", "/bin/sh")
"""Absolute paths tried in order on Linux and macOS."""

WINDOWS_SHELLS: tuple[str, ...] = ("pwsh", "powershell.exe")
"""Program names looked up on PATH, in order, on Windows."""


def shell_candidates() -> tuple[str, ...]:
    """The shells this platform looks for, in order."""
    if sys.platform == "win32":
        return WINDOWS_SHELLS
    return POSIX_SHELLS


def find_shell(candidates: Sequence[str] | None = None) -> str | None:
    """The first usable shell of `candidates` (default: this platform's), or None.

    An absolute candidate must be an executable file; a bare name is looked up on PATH (the
    PATH of this moment: a request freezes what it found, so later PATH changes only affect new
    runtimes).
    """
    for candidate in shell_candidates() if candidates is None else candidates:
        if os.path.isabs(candidate):
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
            continue
        found = shutil.which(candidate)
        if found is not None:
            return found
    return None


def missing_shell_diagnostic(candidates: Sequence[str] | None = None) -> str:
    """The settings diagnostic shown when no shell exists (names only configured paths)."""
    looked = ", ".join(shell_candidates() if candidates is None else candidates)
    return f"process_execute is unavailable: no shell found (looked for {looked})"


def shell_argv(shell: str, command: str) -> list[str]:
    """The argv that runs `command` through `shell`, non-interactively."""
    if sys.platform == "win32":
        return [shell, "-NoLogo", "-NoProfile", "-NonInteractive", "-Command", command]
    return [shell, "-c", command]
