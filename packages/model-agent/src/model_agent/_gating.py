"""Tool visibility by runtime, mode, execution space, shell and depth, and call-time checks.

The visibility table:

| runtime | mode    | space | process_execute            | subagent_delegate              |
|---------|---------|-------|----------------------------|--------------------------------|
| model   | ask     | local | hidden                     | offered (child read-only)      |
| model   | execute | local | offered if a shell exists  | offered (child execute)        |
| model   | any     | ssh   | hidden                     | hidden (no remote backend)     |
| other   | any     | any   | hidden                     | hidden                         |

Read tools are offered in both modes, write tools in execute only; at depth 1 delegation is
hidden. In `ssh` nothing local is offered: the workspace is remote and there is no silent
fallback to this machine. Hiding is not the boundary: `call_rejection` re-checks every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._shell import missing_shell_diagnostic
from ._tool import Mode, RequestContext, Runtime, Space
from ._workspace_tools import EDIT_FILE, LIST_DIRECTORY, READ_FILE, SEARCH_TEXT, WRITE_FILE

PROCESS_EXECUTE = "process_execute"
SUBAGENT_DELEGATE = "subagent_delegate"
READ_TOOLS: tuple[str, ...] = (READ_FILE, LIST_DIRECTORY, SEARCH_TEXT)
WRITE_TOOLS: tuple[str, ...] = (WRITE_FILE, EDIT_FILE)
BUILTIN_TOOLS: tuple[str, ...] = (*READ_TOOLS, *WRITE_TOOLS, PROCESS_EXECUTE, SUBAGENT_DELEGATE)
EXECUTE_ACTIONS = frozenset({PROCESS_EXECUTE, *WRITE_TOOLS})
"""Calls that act on the machine: only in execute mode, and approved first when asked to."""

SSH_DIAGNOSTIC = (
    "the ssh execution space has no direct-model backend: workspace, process and subagent "
    "tools are not offered"
)


@dataclass(frozen=True, slots=True)
class Visibility:
    """The tools offered for a set of dimensions, and the settings diagnostics to show."""

    tools: tuple[str, ...]
    diagnostics: tuple[str, ...]


def visible_tools(
    *,
    runtime: Runtime,
    mode: Mode,
    space: Space,
    depth: int,
    shell: str | None,
    shell_candidates: Sequence[str] | None = None,
) -> Visibility:
    """The built-in tools offered for these dimensions, in a stable order."""
    if space == "ssh":
        return Visibility((), (SSH_DIAGNOSTIC,))
    offered = [
        name
        for name in BUILTIN_TOOLS
        if dimension_rejection(
            name, runtime=runtime, mode=mode, space=space, depth=depth, shell=shell
        )
        is None
    ]
    diagnostics: list[str] = []
    if runtime == "model" and mode == "execute" and shell is None:
        diagnostics.append(missing_shell_diagnostic(shell_candidates))
    return Visibility(tuple(offered), tuple(diagnostics))


def dimension_rejection(
    name: str, *, runtime: Runtime, mode: Mode, space: Space, depth: int, shell: str | None
) -> str | None:
    """Why `name` is not allowed for these dimensions, or None when it is (built-ins only)."""
    if name not in BUILTIN_TOOLS:
        return None
    if space == "ssh":
        return f"{name} is not available in the ssh execution space"
    if name in (PROCESS_EXECUTE, SUBAGENT_DELEGATE) and runtime != "model":
        return f"{name} is only available to the direct model runtime"
    if name in EXECUTE_ACTIONS and mode != "execute":
        return f"{name} is not available in ask mode"
    if name == PROCESS_EXECUTE and shell is None:
        return f"{name} is not available: no shell was found"
    if name == SUBAGENT_DELEGATE and depth >= 1:
        return f"{name} is not available to a delegated child (maximum depth is 1)"
    return None


def call_rejection(name: str, context: RequestContext) -> str | None:
    """Re-validates one call at call time; None when it may run, else the tool error text.

    Checks the request is still active, the dimensions of the request allow the tool, and the
    tool is in the snapshot offered when the request began (a stale or forged call fails).
    """
    if context.state == "cancelling":
        return "tool call rejected: the request is being cancelled"
    if context.state != "active":
        return "tool call rejected: the request has ended"
    reason = dimension_rejection(
        name,
        runtime=context.runtime,
        mode=context.mode,
        space=context.space,
        depth=context.depth,
        shell=context.shell,
    )
    if reason is not None:
        return f"tool call rejected: {reason}"
    if name not in context.tool_names:
        if name in BUILTIN_TOOLS:
            return f"tool call rejected: {name} is not enabled for this request"
        return "tool call rejected: no such tool"
    return None
