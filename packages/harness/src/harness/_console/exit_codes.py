"""Exit codes and the one error type the CLI turns into a clean message."""

from __future__ import annotations

EXIT_OK = 0
"""The command did what it was asked; a run completed."""
EXIT_INCOMPLETE = 1
"""A run that did not complete (error, abort, refusal, token limit) or a scenario that failed."""
EXIT_USAGE = 2
"""Usage or configuration error: bad flags, bad harness.toml, a missing API key."""
EXIT_INTERRUPTED = 130
"""Stopped by Ctrl-C (SIGINT), after every command and child was stopped (128 + SIGINT)."""


def signal_exit_code(received: list[int]) -> int | None:
    """128 + the first signal that stopped the command (130 for Ctrl-C), or None."""
    return 128 + received[0] if received else None


class UsageError(Exception):
    """A problem the person running the command can fix; printed as one line, exit 2."""
