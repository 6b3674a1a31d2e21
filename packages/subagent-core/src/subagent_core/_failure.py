"""A run's failure facts and how they compose into its diagnostic, once for every provider.

Every provider settles a run from the same three kinds of facts: where it failed and what kind
of failure it was (`Failure`: a stage and a category from closed vocabularies, a closed stop
reason variant, the observed process outcome), the permission gate's record (the latest
decision and the latest refusal), and whether the teardown confirmed the tree gone. The rules
that turn them into the one safe diagnostic live here, so they cannot drift between providers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._diagnostics import FailureCategory, failure_line
from ._process import ProcessOutcome
from ._types import StopReason


@dataclass(frozen=True, slots=True)
class Failure:
    """Where a run failed and what kind of failure it was.

    `stage` is one of the provider's closed stage names (`initialize`, `prompt`, `process`,
    `teardown`, …); `stop_reason` carries only closed remote-limit variants (for example
    `max_turn_requests`), never a value the child chose that is not in a fixed set.
    """

    stage: str
    category: FailureCategory
    stop_reason: str | None = None
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


def result_diagnostic(
    provider: str,
    stop_reason: StopReason,
    failure: Failure | None,
    permission: str | None,
    refused: str | None,
) -> str | None:
    """Composes a settled result's diagnostic from its facts (failure first, then permission).

    - `completed` → the line of the latest request the parent refused, else nothing (a refusal
      that shaped a completed run stays visible);
    - `error` → the failure line (`unknown` when none is known), then the permission line when
      a permission request took part;
    - a remote `aborted` with a failure (the child stopped without being asked) → the same;
    - `max-tokens`, `refusal`, a remote `aborted` without one → the permission line alone.

    A local cancel settles without a diagnostic and never calls this.
    """
    if stop_reason == "completed":
        return refused
    if stop_reason == "error" or (stop_reason == "aborted" and failure is not None):
        lines = [(failure or Failure("prompt", "unknown")).line(provider)]
        if permission is not None:
            lines.append(permission)
        return "\n".join(lines)
    return permission


def teardown_line(provider: str, outcome: ProcessOutcome | None, stage: str = "teardown") -> str:
    """The line reported when the tree is not confirmed gone after the SIGKILL wait (`stage`
    is the provider's name for its teardown: the SDK's is `shutdown`)."""
    return Failure(stage, "unknown", outcome=outcome).line(provider)
