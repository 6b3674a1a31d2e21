"""The Codex provider's closed mapping: a failed turn's `codexErrorInfo` → stop reason and facts.

The only module that maps; the facts compose into a diagnostic by the kit's rules
(`subagent_core.kit.Failure`, `result_diagnostic`). Every value it emits comes from a closed
vocabulary; `error.message`, `additionalDetails`, item text, commands, cwd and approval
reasons are never read here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, cast

from subagent_core import StopReason
from subagent_core.kit import Failure
from subagent_core.kit import result_diagnostic as result_diagnostic

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
