"""The SDK provider's closed facts: turn-end and error classes → stop reason and failure.

Only closed values and error classes are read; a message, a raw reason or the stderr tail never
is. The stages are the SDK's own: `initialize` (the spawn and the handshake),
`session-run` (the prompt and its turn), `shutdown` (the runtime's release).
"""

from __future__ import annotations

from typing import Final, Literal

from subagent_core import StopReason
from subagent_core.kit import Failure

from ._errors import JSONRPCError, RequestTimeoutError, SDKProtocolError, TransportClosedError
from ._wire import TurnEnd

ErrorCategory = Literal["protocol", "transport", "timeout", "unknown"]

INITIALIZE_STAGE: Final = "initialize"
RUN_STAGE: Final = "session-run"
SHUTDOWN_STAGE: Final = "shutdown"


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


def turn_end_facts(turn_end: TurnEnd | None) -> tuple[StopReason, Failure | None]:
    """The stop reason and failure facts of the last root `turn/end` (`None`: there was none).

    No failure means the stop reason says it all (no failure line, even for `interrupted`'s
    `error`).
    """
    if turn_end is None:
        return "error", Failure(RUN_STAGE, "missing-terminal")
    match turn_end.kind:
        case "completed":
            return "completed", None
        case "max-tokens":
            return "max-tokens", None
        case "aborted" if turn_end.abort_cause == "disposed":
            return "aborted", Failure(RUN_STAGE, "child-disposed", stop_reason="aborted")
        case "aborted":
            return "aborted", None
        case "blocked":
            return "refusal", None
        case "error":
            return "error", Failure(RUN_STAGE, "child-error", stop_reason="error")
        case "interrupted":
            return "error", None
        case None:
            return "error", Failure(RUN_STAGE, "child-unknown")


def turn_end_result(provider: str, turn_end: TurnEnd | None) -> tuple[StopReason, str | None]:
    """The stop reason and diagnostic for the last root `turn/end` (`None`: there was none)."""
    stop_reason, failure = turn_end_facts(turn_end)
    return stop_reason, None if failure is None else failure.line(provider)
