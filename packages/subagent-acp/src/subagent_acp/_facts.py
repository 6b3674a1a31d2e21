"""The ACP provider's safe failure facts and how they compose into a diagnostic.

Every value here comes from a closed vocabulary, the configured provider name, or a number the
managed process reported; nothing the child wrote can reach the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from subagent_core import StopReason
from subagent_core.kit import ProcessOutcome, failure_line

Stage = Literal["initialize", "new-session", "prompt", "process", "teardown"]
Category = Literal[
    "authentication",
    "configuration",
    "transport",
    "protocol",
    "process-exit",
    "process-start",
    "remote-limit",
    "timeout",
    "unknown",
]


@dataclass(frozen=True, slots=True)
class Failure:
    """Where a run failed and what kind of failure it was."""

    stage: Stage
    category: Category
    stop_reason: str | None = None
    """Only closed ACP values (today only `max_turn_requests`)."""
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


def result_diagnostic(
    provider: str,
    stop_reason: StopReason,
    failure: Failure | None,
    permission: str | None,
    refused: str | None = None,
) -> str | None:
    """Composes a settled result's diagnostic from its facts.

    `error` → the failure line, then the permission line when a permission request took part;
    `max-tokens`, `refusal` and a remote `aborted` → the permission line alone (if any);
    `completed` → the line of the latest request the parent refused, else nothing (a refusal
    that shaped a completed run stays visible). A local cancel never calls this.
    """
    if stop_reason == "completed":
        return refused
    if stop_reason == "error":
        lines = [(failure or Failure("prompt", "unknown")).line(provider)]
        if permission is not None:
            lines.append(permission)
        return "\n".join(lines)
    return permission


def teardown_line(provider: str, outcome: ProcessOutcome | None) -> str:
    """The line reported when the tree is not confirmed gone after the SIGKILL wait."""
    return Failure("teardown", "unknown", outcome=outcome).line(provider)
