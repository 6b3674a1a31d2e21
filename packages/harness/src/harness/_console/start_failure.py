"""Why a child could not start, in words a user can act on, from closed reasons only.

The diagnostic of a spawn failure stays `process-start` (nothing from the OS message); the
reason class comes from core's `SpawnError.reason` in the error's cause chain.
"""

from __future__ import annotations

from subagent_core.kit import SpawnError


def spawn_reason(error: BaseException) -> str | None:
    """The closed reason (`not-found`, `not-executable`, `bad-cwd`, `os-error`) a spawn failed."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, SpawnError):
            return seen.reason
        seen = seen.__cause__
    return None


SPAWN_HINTS = {
    "not-found": "the command was not found (is it installed and on PATH?)",
    "not-executable": "the command is not executable",
    "bad-cwd": "the child's working directory does not exist",
    "os-error": "the operating system refused to start it",
}
