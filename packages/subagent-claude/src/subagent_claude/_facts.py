"""The Claude provider's closed mappings: the `result` frame and the tool kinds.

The only module that maps; the facts compose into a diagnostic by the kit's rules
(`subagent_core.kit.Failure`, `result_diagnostic`). The CLI's `result` prose ("API Error: …"),
`errors[]`, assistant text, tool inputs and stderr are read only to be thrown away: the mapping
compares closed protocol values (`subtype`, `stop_reason`, `terminal_reason`, the assistant
`error` code, HTTP statuses) against fixed sets and never copies an unknown one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from subagent_core import StopReason, ToolKind
from subagent_core.kit import Failure

_TOOL_KINDS: Final[dict[str, ToolKind]] = {
    "Bash": "execute",
    "Edit": "edit",
    "Write": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Read": "read",
    "Glob": "search",
    "Grep": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
}


def tool_kind_of(tool_name: object) -> ToolKind:
    """The ACP tool kind of a Claude Code tool name; anything else (`mcp__*`, …) is `other`."""
    return _TOOL_KINDS.get(tool_name, "other") if isinstance(tool_name, str) else "other"


AUTH_STATUSES: Final = frozenset({401, 403})
_LIMIT_ERRORS: Final = frozenset({"billing_error", "rate_limit"})
_LIMIT_SUBTYPES: Final = frozenset({"error_max_turns", "error_max_budget_usd"})
_COMPLETED_STOPS: Final = frozenset({"end_turn", "stop_sequence", "tool_use", None})


def is_auth_signal(error: object, status: object) -> bool:
    """An `authentication_failed` error code or a 401/403 status: settle at once."""
    return error == "authentication_failed" or (
        isinstance(status, int) and not isinstance(status, bool) and status in AUTH_STATUSES
    )


def _status(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def map_result(
    result: Mapping[str, Any], last_error: object, *, interrupted: bool
) -> tuple[StopReason, Failure | None]:
    """Maps a `result` frame and the last assistant `error` code (spec mapping, in order).

    An `aborted_*` end the parent asked for (`interrupted`) is a local cancel: no failure; one
    it did not ask for carries its failure, which makes it a remote abort with a diagnostic.
    """
    subtype = result.get("subtype")
    stop = result.get("stop_reason")
    terminal = result.get("terminal_reason")
    status = _status(result.get("api_error_status"))
    is_error = result.get("is_error") is not False
    if stop == "refusal":
        return "refusal", None
    if stop == "max_tokens" or last_error == "max_output_tokens":
        return "max-tokens", None
    if subtype in _LIMIT_SUBTYPES:
        return "error", Failure("prompt", "remote-limit", stop_reason=str(subtype))
    if subtype == "error_max_structured_output_retries":
        return "error", Failure("prompt", "output-schema")
    if isinstance(terminal, str) and terminal.startswith("aborted"):
        if interrupted:
            return "aborted", None
        return "aborted", Failure("prompt", "unknown", stop_reason="aborted")
    if is_auth_signal(last_error, status):
        return "error", Failure("prompt", "authentication")
    if last_error in _LIMIT_ERRORS or status == 429:
        return "error", Failure("prompt", "remote-limit")
    if (
        last_error in ("server_error", "api_error")
        or (status is not None and status >= 500)
        or (is_error and terminal == "api_error")
    ):
        return "error", Failure("prompt", "upstream")
    if subtype == "success" and not is_error and stop in _COMPLETED_STOPS:
        return "completed", None
    return "error", Failure("prompt", "unknown")
