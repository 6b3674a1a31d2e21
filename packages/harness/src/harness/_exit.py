"""Exit codes and the one error type the CLI turns into a clean message."""

from __future__ import annotations

EXIT_OK = 0
"""The command did what it was asked; a run completed."""
EXIT_INCOMPLETE = 1
"""A run that did not complete (error, abort, refusal, token limit) or a scenario that failed."""
EXIT_USAGE = 2
"""Usage or configuration error: bad flags, bad harness.toml, a missing API key."""


class UsageError(Exception):
    """A problem the person running the command can fix; printed as one line, exit 2."""
