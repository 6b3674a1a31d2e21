"""The Claude provider's safe failure facts, the `result` mapping, and the tool kinds.

Every value that reaches a diagnostic comes from a closed vocabulary, the configured provider
name, or a number the managed process reported. The CLI's `result` prose ("API Error: …"),
`errors[]`, assistant text, tool inputs and stderr are read only to be thrown away: the mapping
compares closed protocol values (`subtype`, `stop_reason`, `terminal_reason`, the assistant
`error` code, HTTP statuses) against fixed sets and never copies an unknown one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from subagent_core import StopReason, ToolKind
from subagent_core.kit import ProcessOutcome, failure_line

Stage = Literal["initialize", "prompt", "process", "teardown"]
Category = Literal[
    "authentication",
    "configuration",
    "transport",
    "protocol",
    "process-exit",
    "process-start",
    "remote-limit",
    "upstream",
    "output-schema",
    "timeout",
    "unknown",
]


@dataclass(frozen=True, slots=True)
class Failure:
    """Where a run failed and what kind of failure it was."""

    stage: Stage
    category: Category
    stop_reason: str | None = None
    """Only closed CLI values (`error_max_turns`, `error_max_budget_usd`, `aborted`)."""
    outcome: ProcessOutcome | None = None
    """The managed process outcome, only when it was actually observed."""

    def line(self, provider: str) -> str:
        """The failure line for `provider`."""
        outcome = self.outcome
        return failure_line(
            provider,
            self.stage,
            self.category,
            stop_reason=self.stop_reason,
            exit_code=None if outcome is None else outcome.exit_code,
            signal=None if outcome is None else outcome.signal,
        )


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


@dataclass(frozen=True, slots=True)
class Mapped:
    """A `result` frame read as closed facts."""

    stop_reason: StopReason
    failure: Failure | None = None
    remote_abort: bool = False
    """`aborted_*` the parent did not ask for."""


def map_result(result: Mapping[str, Any], last_error: object, *, interrupted: bool) -> Mapped:
    """Maps a `result` frame and the last assistant `error` code (spec mapping, in order)."""
    subtype = result.get("subtype")
    stop = result.get("stop_reason")
    terminal = result.get("terminal_reason")
    status = _status(result.get("api_error_status"))
    is_error = result.get("is_error") is not False
    if stop == "refusal":
        return Mapped("refusal")
    if stop == "max_tokens" or last_error == "max_output_tokens":
        return Mapped("max-tokens")
    if subtype in _LIMIT_SUBTYPES:
        return Mapped("error", Failure("prompt", "remote-limit", stop_reason=str(subtype)))
    if subtype == "error_max_structured_output_retries":
        return Mapped("error", Failure("prompt", "output-schema"))
    if isinstance(terminal, str) and terminal.startswith("aborted"):
        if interrupted:
            return Mapped("aborted")
        return Mapped(
            "aborted", Failure("prompt", "unknown", stop_reason="aborted"), remote_abort=True
        )
    if is_auth_signal(last_error, status):
        return Mapped("error", Failure("prompt", "authentication"))
    if last_error in _LIMIT_ERRORS or status == 429:
        return Mapped("error", Failure("prompt", "remote-limit"))
    if (
        last_error in ("server_error", "api_error")
        or (status is not None and status >= 500)
        or (is_error and terminal == "api_error")
    ):
        return Mapped("error", Failure("prompt", "upstream"))
    if subtype == "success" and not is_error and stop in _COMPLETED_STOPS:
        return Mapped("completed")
    return Mapped("error", Failure("prompt", "unknown"))


def result_diagnostic(
    provider: str,
    mapped: Mapped,
    permission: str | None,
    refused: str | None,
) -> str | None:
    """Composes a settled result's diagnostic (the seam's composition rules).

    `error` → the failure line, then the permission line when a permission request took part;
    `max-tokens`, `refusal` → the permission line alone (if any); a remote abort → its failure
    line (as ACP's `cancelled`), then the permission line; `completed` → the line of the latest
    refused request, else nothing. A local cancel never calls this.
    """
    if mapped.stop_reason == "completed":
        return refused
    if mapped.stop_reason == "error" or mapped.remote_abort:
        lines = [(mapped.failure or Failure("prompt", "unknown")).line(provider)]
        if permission is not None:
            lines.append(permission)
        return "\n".join(lines)
    return permission


def teardown_line(provider: str, outcome: ProcessOutcome | None) -> str:
    """The line reported when the tree is not confirmed gone after the SIGKILL wait."""
    return Failure("teardown", "unknown", outcome=outcome).line(provider)
