"""Shared CLI plumbing: turning expected failures into one line and an exit code."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

from harness._console.exit_codes import EXIT_USAGE, UsageError

_P = ParamSpec("_P")
_R = TypeVar("_R")


def fail(message: str, code: int) -> typer.Exit:
    """Prints `harness: <message>` on stderr and returns the Exit to raise."""
    sys.stderr.write(f"harness: {message}\n")
    sys.stderr.flush()
    return typer.Exit(code)


def cli_errors(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """A `UsageError` (bad config, missing key) becomes one stderr line and exit 2, no traceback."""

    @functools.wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return function(*args, **kwargs)
        except UsageError as error:
            raise fail(str(error), EXIT_USAGE) from None

    return wrapper
