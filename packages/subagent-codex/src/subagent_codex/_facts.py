"""The Codex provider's safe failure facts: closed protocol values → stop reason and diagnostic.

The only module that maps. Every value it emits comes from a closed vocabulary, the configured
provider name, or a number the managed process reported; `error.message`,
`additionalDetails`, item text, commands, cwd and approval reasons are never read here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, cast

from subagent_core import StopReason
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
    "timeout",
    "upstream",
    "output-schema",
    "unknown",
]


@dataclass(frozen=True, slots=True)
class Failure:
    """Where a run failed and what kind of failure it was."""

    stage: Stage
    category: Category
    stop_reason: str | None = None
    """Only the closed remote-limit variants, in kebab-case."""
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


_LIMITS: Final = frozenset(
    {"usageLimitExceeded", "rateLimitExceeded", "sessionBudgetExceeded", "tooManyDenials"}
)
_REFUSALS: Final = frozenset({"cyberPolicy", "misalignmentPolicyViolation"})
_UPSTREAM: Final = frozenset(
    {
        "serverOverloaded",
        "internalServerError",
        "httpConnectionFailed",
        "responseStreamConnectionFailed",
        "responseStreamDisconnected",
        "responseTooManyFailedAttempts",
    }
)
_AUTH_STATUSES: Final = frozenset({401, 403})


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def error_variant(info: object) -> tuple[str | None, int | None]:
    """The `codexErrorInfo` variant name (a string or the single key of an object) and the
    `httpStatusCode` it carries, if any. The name is only ever compared, never copied."""
    if isinstance(info, str):
        return info, None
    if isinstance(info, Mapping) and len(cast(Mapping[object, object], info)) == 1:
        name, body = next(iter(cast(Mapping[object, object], info).items()))
        status: object = None
        if isinstance(body, Mapping):
            status = cast(Mapping[str, object], body).get("httpStatusCode")
        code = status if isinstance(status, int) and not isinstance(status, bool) else None
        return (name if isinstance(name, str) else None), code
    return None, None


def is_authentication(info: object) -> bool:
    """True for `unauthorized` or any variant carrying HTTP 401/403: decided at the first
    `error` frame that shows it, even one codex means to retry (it would retry for seconds)."""
    name, status = error_variant(info)
    return name == "unauthorized" or status in _AUTH_STATUSES


def map_failed_turn(info: object) -> tuple[StopReason, Failure | None]:
    """Maps a `failed` turn's `codexErrorInfo` (the last one seen) to a stop reason."""
    if is_authentication(info):
        return "error", Failure("prompt", "authentication")
    name, _ = error_variant(info)
    if name == "contextWindowExceeded":
        return "max-tokens", None
    if name in _LIMITS:
        assert name is not None
        return "error", Failure("prompt", "remote-limit", stop_reason=_kebab(name))
    if name in _REFUSALS:
        return "refusal", None
    if name in _UPSTREAM:
        return "error", Failure("prompt", "upstream")
    return "error", Failure("prompt", "unknown")


def result_diagnostic(
    provider: str,
    stop_reason: StopReason,
    failure: Failure | None,
    permission: str | None,
    refused: str | None,
) -> str | None:
    """Composes a settled result's diagnostic from its facts (failure, then permission).

    `error` → the failure line, then the permission line when a permission request took part;
    `max-tokens`, `refusal`, a remote `aborted` → the permission line alone (if any);
    `completed` → the line of the latest refused request, else nothing. A local cancel never
    calls this.
    """
    if stop_reason == "completed":
        return refused
    if stop_reason == "error":
        lines = [(failure or Failure("prompt", "unknown")).line(provider)]
        if permission is not None:
            lines.append(permission)
        return "\n".join(lines)
    if stop_reason == "aborted" and failure is not None:
        lines = [failure.line(provider)]
        if permission is not None:
            lines.append(permission)
        return "\n".join(lines)
    return permission


def teardown_line(provider: str, outcome: ProcessOutcome | None) -> str:
    """The line reported when the tree is not confirmed gone after the SIGKILL wait."""
    return Failure("teardown", "unknown", outcome=outcome).line(provider)
