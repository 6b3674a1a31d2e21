"""What a fan-out returns and tells while it runs: one `FanoutResult` per child, its rank.

Ranking (`ranked`), best first: the verify outcome (`pass`, `fail`, `timeout`, `error`,
`cancelled`, not run, `tampered`), then the stop reason (`completed`, `max-tokens`, `refusal`,
`aborted`, `error`), then the cost (unknown last; amounts compared whatever the currency), then
the wall time; the child's number breaks a tie.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from subagent_core import SubagentEvent, SubagentResult

from ._isolation import FileChange
from ._verify import VerifyOutcome, verify_order

STOP_ORDER = {"completed": 0, "max-tokens": 1, "refusal": 2, "aborted": 3, "error": 4}
"""Best first; a stop reason this table does not know ranks after `error`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FanoutResult:
    """One child of a fan-out: how it ended, how long it took, what it changed."""

    number: int
    """1-based position in the agents asked for."""
    agent: str
    """The provider name it ran on (configuration, not child text)."""
    result: SubagentResult
    """Its result, exactly as one delegation returns it (`output` is child text)."""
    wall_seconds: float
    """From the start request to the settled result."""
    files: tuple[FileChange, ...] = ()
    """The files it changed against its base (paths are child-controlled)."""
    patch: Path | None = None
    """Its diff against the base as a patch file (binary-safe); None when nothing changed."""
    isolation_path: Path | None = None
    """Where it worked (its worktree or copy, removed afterwards unless kept)."""
    branch: str | None = None
    """Its worktree's branch (deleted afterwards unless kept)."""
    timed_out: bool = False
    """The fan-out's deadline cancelled it (it ended `aborted`)."""
    teardown: str | None = None
    """The provider's safe teardown note, when disposing needed force."""
    start_failure: str | None = None
    """Why it could not start (`not-found`, `not-executable`, `bad-cwd`, `os-error`)."""
    changes_error: str | None = None
    """Why its changes could not be read (fixed text; `files` is then empty)."""
    session: str | None = None
    """The name it is kept under as a session (`--keep` with a provider that can resume)."""
    verify: VerifyOutcome | None = None
    """Its verify outcome, when the fan-out was given a verify command and the check ran."""
    rank: int = 0
    """1 for the best child of the fan-out (see `ranked`); 0 until ranked."""
    run_id: str = ""
    """The fan-out run it belongs to (its folder under the state directory)."""

    @property
    def lines_added(self) -> int:
        """Lines added over every text file."""
        return sum(change.added or 0 for change in self.files)

    @property
    def lines_deleted(self) -> int:
        """Lines deleted over every text file."""
        return sum(change.deleted or 0 for change in self.files)


def rank_key(outcome: FanoutResult) -> tuple[int, int, float, float, int]:
    """Where `outcome` sorts among its run's children (lower is better)."""
    usage = outcome.result.usage
    cost = math.inf if usage is None or usage.cost is None else usage.cost.amount
    return (
        verify_order(outcome.verify),
        STOP_ORDER.get(outcome.result.stop_reason, len(STOP_ORDER)),
        cost,
        outcome.wall_seconds,
        outcome.number,
    )


def ranked(outcomes: Sequence[FanoutResult]) -> list[FanoutResult]:
    """The same outcomes, in the order given, each with its `rank` set (1 = best)."""
    order = sorted(outcomes, key=rank_key)
    ranks = {outcome.number: place for place, outcome in enumerate(order, start=1)}
    return [dataclasses.replace(outcome, rank=ranks[outcome.number]) for outcome in outcomes]


def by_rank(outcomes: Sequence[FanoutResult]) -> list[FanoutResult]:
    """The outcomes best first (by `rank`, then number)."""
    return sorted(outcomes, key=lambda outcome: (outcome.rank, outcome.number))


class FanoutObserver(Protocol):
    """Follows a fan-out while it runs (the CLI's live rows); called on the event loop."""

    def started(self, number: int, agent: str) -> None:
        """Child `number` has its place and is being started."""

    def event(self, number: int, event: SubagentEvent) -> None:
        """An event of child `number` (its text is child-controlled)."""

    def finished(self, outcome: FanoutResult) -> None:
        """Child `outcome.number` settled, was disposed, its changes were read (and checked)."""


@runtime_checkable
class VerifyObserver(Protocol):
    """An observer that also hears when a child's verify starts (optional for observers)."""

    def verifying(self, number: int) -> None:
        """Child `number` settled and its verify command is running."""
