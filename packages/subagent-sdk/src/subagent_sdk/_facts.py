"""The SDK provider's safe facts: turn-end and error classes → stop reason and fixed text.

Only closed values and error classes are read; a message, a raw reason or the stderr tail never
is.
"""

from __future__ import annotations

from typing import Literal

from subagent_core import StopReason
from subagent_core.kit import failure_line

from ._errors import JSONRPCError, RequestTimeoutError, SDKProtocolError, TransportClosedError
from ._wire import TurnEnd

ErrorCategory = Literal["protocol", "transport", "timeout", "unknown"]


def error_category(error: BaseException) -> ErrorCategory:
    """`SDKProtocolError` and `JSONRPCError` → protocol; `TransportClosedError` → transport;
    `RequestTimeoutError` (the startup deadline ran out on `initialize`) → timeout."""
    if isinstance(error, RequestTimeoutError):
        return "timeout"
    if isinstance(error, SDKProtocolError | JSONRPCError):
        return "protocol"
    if isinstance(error, TransportClosedError):
        return "transport"
    return "unknown"


def turn_end_result(provider: str, turn_end: TurnEnd | None) -> tuple[StopReason, str | None]:
    """The stop reason and diagnostic for the last root `turn/end` (`None`: there was none)."""
    if turn_end is None:
        return "error", failure_line(provider, "session-run", "missing-terminal")
    match turn_end.kind:
        case "completed":
            return "completed", None
        case "max-tokens":
            return "max-tokens", None
        case "aborted" if turn_end.abort_cause == "disposed":
            return "aborted", failure_line(
                provider, "session-run", "child-disposed", stop_reason="aborted"
            )
        case "aborted":
            return "aborted", None
        case "blocked":
            return "refusal", None
        case "error":
            return "error", failure_line(
                provider, "session-run", "child-error", stop_reason="error"
            )
        case "interrupted":
            return "error", None
        case None:
            return "error", failure_line(provider, "session-run", "child-unknown")
