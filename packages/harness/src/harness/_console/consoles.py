"""Consoles for tables and progress: no wrapping or colour codes when the stream is not a TTY."""

from __future__ import annotations

import os
import sys

from rich.console import Console

PIPE_WIDTH = 10_000
"""Width when writing to a pipe or file: wide enough that no row is ever wrapped."""


def output_console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr) that wraps only on a terminal.

    On a terminal rich measures the window; elsewhere a table is laid out at its natural width
    (unless `COLUMNS` says otherwise), so `harness providers | grep` sees whole rows.
    """
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty() or "COLUMNS" in os.environ:
        return Console(stderr=stderr, highlight=False)
    return Console(stderr=stderr, highlight=False, width=PIPE_WIDTH, soft_wrap=True)
