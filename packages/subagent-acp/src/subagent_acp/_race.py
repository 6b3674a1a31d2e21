"""How a raced request ended, and the failure facts a lost race stands for.

The run races every request against the process exiting, the cancel signal, the stop request
and its deadlines; this module turns the contender that won into the closed stage/category
facts of the package README's classification rules.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final, Generic, Literal, TypeVar

from subagent_core.kit import ProcessOutcome

from ._bridge import classify_error
from ._facts import Failure, Stage

_log = logging.getLogger("subagent_acp")

T = TypeVar("T")

# The per-stage category for a schema-invalid answer or any other unexpected exception.
_UNEXPECTED: Final[dict[Stage, Literal["transport", "protocol", "unknown"]]] = {
    "initialize": "transport",
    "new-session": "protocol",
    "prompt": "unknown",
}


def unexpected(stage: Stage) -> Failure:
    """The failure for a schema-invalid answer or any other unexpected exception at `stage`."""
    return Failure(stage, _UNEXPECTED.get(stage, "unknown"))


@dataclass(slots=True)
class Raced(Generic[T]):
    """Which contender of a race finished first (`timeout`: a deadline of the run)."""

    kind: Literal["value", "error", "exit", "cancel", "timeout"]
    value: T | None = None
    error: Exception | None = None


def lost_race_failure(
    stage: Stage,
    raced: Raced[T],
    outcome: ProcessOutcome | None,
    *,
    broken: bool,
    run_id: str,
) -> Failure:
    """The failure facts of a race `raced` lost at `stage`.

    `outcome` is the process outcome if observed; `broken` is True when the transport ended the
    connection itself (an over-long line, a stalled write).
    """
    exit_stage: Stage = "process" if stage == "prompt" else stage
    if raced.kind == "exit":
        _log.info("ACP run %s: the child exited during %s", run_id, stage)
        return Failure(exit_stage, "process-exit", outcome=outcome)
    if raced.kind == "timeout":
        _log.info("ACP run %s: %s ran into the run's deadline", run_id, stage)
        return Failure(stage, "timeout")
    error = raced.error
    assert error is not None
    _log.info("ACP run %s: %s failed", run_id, stage, exc_info=error)
    if broken:
        return Failure(stage, "transport")
    kind = classify_error(error)
    if kind == "auth-required":
        return Failure(stage, "authentication")
    if kind == "rpc-error":
        return Failure(stage, "transport")
    if kind == "connection-lost":
        if outcome is not None:
            return Failure(exit_stage, "process-exit", outcome=outcome)
        return Failure(stage, "transport")
    return unexpected(stage)
