"""The ACP provider's closed mappings: stop reasons, error codes, and the unexpected per stage.

The facts compose into a diagnostic by the kit's rules (`subagent_core.kit.Failure`,
`result_diagnostic`). Every value here comes from a closed vocabulary; nothing the child wrote
is read, so nothing it wrote can reach the text.
"""

from __future__ import annotations

from typing import Final

from subagent_core import StopReason
from subagent_core.kit import Failure, FailureCategory
from subagent_core.kit import result_diagnostic as result_diagnostic
from subagent_core.kit import teardown_line as teardown_line

_STOP_REASONS: Final[dict[str, StopReason]] = {
    "end_turn": "completed",
    "max_tokens": "max-tokens",
    "refusal": "refusal",
    "cancelled": "aborted",
}


def map_stop_reason(value: object) -> tuple[StopReason, Failure | None]:
    """Maps an ACP stop reason; unknown values become `error` + `unknown` and are not copied."""
    if isinstance(value, str):
        mapped = _STOP_REASONS.get(value)
        if mapped is not None:
            return mapped, None
        if value == "max_turn_requests":
            return "error", Failure("prompt", "remote-limit", stop_reason="max_turn_requests")
    return "error", Failure("prompt", "unknown")


AUTH_REQUIRED_CODE: Final = -32000
"""ACP's closed `auth_required` error code: naming it copies no child text."""

AUTHENTICATION_CODES: Final = frozenset({AUTH_REQUIRED_CODE, 401, 403})
"""Error codes that mean the child was refused by its model service: ACP's `auth_required`,
and the HTTP statuses 401/403 that gemini-cli (0.61) answers `session/prompt` with as the
JSON-RPC code. Only the number is read, never the message."""

_UNEXPECTED: Final[dict[str, FailureCategory]] = {
    "initialize": "transport",
    "new-session": "protocol",
    "prompt": "unknown",
}


def unexpected(stage: str) -> Failure:
    """The failure for a schema-invalid answer or any other unexpected exception at `stage`."""
    return Failure(stage, _UNEXPECTED.get(stage, "unknown"))
