"""Errors of the subagent seam.

    SubagentError(code, message)
     └── SubagentStartError          code "START_FAILED", carries the safe `.diagnostic`

Child-level failures are never raised; they resolve as a `SubagentResult`.
"""

from __future__ import annotations

from typing import Literal


class SubagentError(Exception):
    """Misuse of the seam or a start that could not happen; `str(e)` is the message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message


class SubagentStartError(SubagentError):
    """A child could not be started; its resources were rolled back first.

    `str(e)` equals `.diagnostic` whenever that is not `None`; the only other text it can hold
    is the fixed "aborted before the child started" sentence.
    """

    def __init__(self, message: str, diagnostic: str | None = None) -> None:
        super().__init__("START_FAILED", diagnostic if diagnostic is not None else message)
        self.diagnostic = diagnostic


ChildKind = Literal["ACP", "SDK", "Claude", "Codex", "model"]
"""The provider class named in the fixed aborted-before-start sentence."""


def aborted_before_start_text(kind: ChildKind) -> str:
    """The fixed text of a start that a cancel stopped with cleanup confirmed."""
    return f"subagent request was aborted before the {kind} child started"


def compose_start_error(
    kind: ChildKind,
    *,
    cancelled: bool,
    startup_line: str | None,
    cleanup_line: str | None,
) -> SubagentStartError:
    """Builds the start error from the facts, by the composition rules of the seam.

    - cancelled, cleanup confirmed (`cleanup_line is None`): the fixed aborted text, no diagnostic;
    - cancelled, cleanup failed: the cleanup line alone;
    - otherwise the startup line, then `\\n` and the cleanup line when cleanup failed.
    """
    if cancelled:
        if cleanup_line is None:
            return SubagentStartError(aborted_before_start_text(kind))
        return SubagentStartError(cleanup_line, cleanup_line)
    parts = [line for line in (startup_line, cleanup_line) if line is not None]
    diagnostic = "\n".join(parts) if parts else None
    return SubagentStartError(diagnostic or "subagent failed to start", diagnostic)
