"""One turn of a child: what the provider's driver reports, how it settles, and its run handle.

A child lives for one or more turns (`ChildSession`); each turn is one prompt and one settled
`SubagentResult`. The provider writes a `TurnDriver` per turn — send the prompt, read until the
child says the turn is over — and reports what it learns through the `Turn`: events, the
permission gate, and the settlement. The turn settles once (`settle`, `complete`, `fail`,
`abort`); whatever comes later is dropped, and the result is composed here from closed facts
only, by the rules in `_failure`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ._cancel import CancelSignal
from ._deadlines import IdleDeadline
from ._events import EventBuffer, SubagentEvent, UsageEvent
from ._failure import Failure, result_diagnostic
from ._permission import PermissionGate, PermissionSetting
from ._run import SubagentRun, new_run_id
from ._tracing import current_run, traceparent
from ._types import Budget, StopReason, SubagentResult, Usage, add_usage

if TYPE_CHECKING:
    from ._diagnostics import PermissionProtocol


class TurnOwner(Protocol):
    """What a turn's handle asks of the session that runs it."""

    async def stop_turn(self, turn: Turn) -> None:
        """Ends `turn` (aborted if still running); the child stays up."""
        ...

    async def aclose(self) -> str | None:
        """Ends the child; `None` once its tree is gone, else the teardown line."""
        ...


class TurnDriver(abc.ABC):
    """One turn of a provider's protocol (what `ChildProtocol.begin_turn` returns).

    The kit calls `run()` in the child's owner task, inside a scope that the turn's cancel
    signal, its idle deadline, the session's stop request and the child's exit (plus a short
    wait for a last reply) cancel; a driver never races these itself. It settles its turn
    through `Turn` when the child reports the end, raises `ChildFailure` for a failure it has
    classified (a lost wire, an error answer), and sets `finished` once the child itself has
    said this turn is over: a turn settled before that (a cancel, the idle deadline, an
    authentication failure) is interrupted by the kit through `interrupt()`.
    """

    finished: bool = False
    """True once the child reported the end of this turn (nothing left to interrupt)."""
    structured_output: object = None
    """The validated structured output of a completed turn (kept only when it completes)."""

    @property
    @abc.abstractmethod
    def output(self) -> str:
        """The turn's answer text so far (bounded by the provider)."""

    @property
    def usage(self) -> Usage | None:
        """What the child reported this turn cost, if anything."""
        return None

    @abc.abstractmethod
    async def run(self) -> None:
        """Sends the prompt and follows the turn until it settles or the wire is lost.

        Raises:
            ChildFailure: a failure the provider classified; the kit settles the turn with it.
        """

    async def interrupt(self) -> None:  # noqa: B027 - a protocol without one has nothing to do
        """Asks the child to stop this turn (best effort; the kit bounds and shields it)."""


class Turn:
    """One turn's state, shared by the holder (its run handle) and the owner (the driver).

    `prompt`, `output_schema` and `cancel` are what was asked; `events`, `gate` and `idle` are
    the turn's own, so nothing of one turn leaks into the next.
    """

    def __init__(
        self,
        *,
        provider: str,
        prompt: str,
        output_schema: dict[str, Any] | None,
        cancel: CancelSignal,
        permission: PermissionSetting,
        permission_protocol: PermissionProtocol,
        reject_with_option: bool,
        idle_seconds: float | None,
        stage: str = "prompt",
        budget: Budget | None = None,
        spent: Usage | None = None,
    ) -> None:
        self.provider = provider
        self.stage = stage
        """The stage this turn's failures name."""
        self.budget = budget
        self.spent = spent
        """What earlier turns of the session consumed (counted against the budget)."""
        self.on_over_budget: Callable[[], None] | None = None
        """Called once when reported usage crosses the budget (the owner interrupts)."""
        self.trace = current_run()
        """The span this turn reports to, when the registry traces the run."""
        self.traceparent: str | None = None if self.trace is None else traceparent()
        """The W3C trace context for the child (a provider sends it where its wire can)."""
        self.prompt = prompt
        self.output_schema = output_schema
        self.cancel = cancel
        self.events = EventBuffer()
        self.idle = IdleDeadline(idle_seconds)
        self.gate = PermissionGate(
            permission,
            permission_protocol,
            self.events.publish,
            reject_with_option=reject_with_option,
            idle=self.idle,
        )
        self.driver: TurnDriver | None = None
        self.result: SubagentResult | None = None
        self.stop_requested = False
        """Set when the holder disposed the turn while it ran (the child is interrupted)."""
        self.idle_expired = False
        self.on_settle: list[Callable[[SubagentResult], None]] = []
        """Called once with the result (session usage totals, a warm pool's refill)."""
        self._settled = anyio.Event()
        self._done = anyio.Event()

    # -- what the driver reports ---------------------------------------------------------------

    def publish(self, event: SubagentEvent) -> None:
        """Publishes an activity event (dropped once the turn has settled).

        A usage report is checked against the budget: once the session's usage with this
        turn's crosses it, the turn settles `error` + `budget` and the owner interrupts it.
        """
        if self.result is not None:
            return
        self.events.publish(event)
        if self.trace is not None:
            self.trace.event(event)
        if self.budget is not None and isinstance(event, UsageEvent):
            reported = Usage(
                input_tokens=event.input_tokens,
                output_tokens=event.output_tokens,
                cached_input_tokens=event.cached_input_tokens,
                cost=event.cost,
            )
            if self.budget.crossed_by(add_usage(self.spent, reported)):
                self.fail(Failure(self.stage, "budget"))
                hook, self.on_over_budget = self.on_over_budget, None
                if hook is not None:
                    hook()

    @property
    def settled(self) -> bool:
        """True once the turn has its result."""
        return self.result is not None

    def settle(self, stop_reason: StopReason, failure: Failure | None = None) -> None:
        """Settles from the child's facts (a remote end); the diagnostic follows the rules."""
        gate = self.gate
        self._settle(
            stop_reason,
            result_diagnostic(self.provider, stop_reason, failure, gate.line, gate.refused),
        )

    def settle_quietly(self, stop_reason: StopReason) -> None:
        """Settles from a remote end whose stop reason says all there is to say: no failure
        line, even for `error` (the SDK's `interrupted`); the permission line alone, as for
        `max-tokens`."""
        self._settle(stop_reason, self.gate.line)

    def complete(self) -> None:
        """Settles `completed` (the latest refused permission stays visible)."""
        self.settle("completed")

    def fail(self, failure: Failure) -> None:
        """Settles `error` with `failure`."""
        self.settle("error", failure)

    def abort(self) -> None:
        """Settles `aborted` for a local cancel: no diagnostic, partial output kept."""
        self._settle("aborted", None)

    def _settle(self, stop_reason: StopReason, diagnostic: str | None) -> None:
        if self.result is not None:
            return
        self.gate.recording = False
        driver = self.driver
        self.result = SubagentResult(
            stop_reason=stop_reason,
            output="" if driver is None else driver.output,
            diagnostic=diagnostic,
            usage=None if driver is None else driver.usage,
            structured_output=(
                driver.structured_output
                if driver is not None and stop_reason == "completed"
                else None
            ),
        )
        self.events.close()
        self._settled.set()
        if self.trace is not None and driver is not None:
            # A turn that never reached the child (a failed start) leaves its span to the
            # registry, which knows why.
            self.trace.end(self.result)
        hooks, self.on_settle = self.on_settle, []
        for hook in hooks:
            hook(self.result)

    async def wait_settled(self) -> None:
        """Returns once the turn has its result."""
        await self._settled.wait()

    # -- the owner's bookkeeping ---------------------------------------------------------------

    @property
    def done(self) -> bool:
        """True once the owner has finished with the turn (its interrupt included)."""
        return self._done.is_set()

    def mark_done(self) -> None:
        """Called by the owner when it is finished with the turn."""
        self._done.set()

    async def wait_done(self) -> None:
        """Returns once the owner has finished with the turn."""
        await self._done.wait()


class TurnRun(SubagentRun):
    """The published handle of one turn.

    `result()` never raises for child failure. A one-shot run (`ends_session`) is the whole
    child: disposing it ends the child and returns the teardown line. A session turn's
    dispose interrupts the turn if it is still running and leaves the child up for the next.
    """

    def __init__(self, session: TurnOwner, turn: Turn, *, ends_session: bool) -> None:
        self.id = new_run_id()
        self._session = session
        self._turn = turn
        self._ends_session = ends_session
        self._events = turn.events

    @property
    def turn(self) -> Turn:
        """The turn this handle publishes."""
        return self._turn

    async def result(self) -> SubagentResult:
        turn = self._turn
        if turn.result is None:
            with turn.cancel.cancel_scope():
                await turn.wait_settled()
            if turn.result is None:
                turn.abort()  # the cancel signal fired first: a local cancel
        assert turn.result is not None
        return turn.result

    async def dispose(self) -> str | None:
        with anyio.CancelScope(shield=True):
            if self._ends_session:
                self._turn.abort()
                return await self._session.aclose()
            await self._session.stop_turn(self._turn)
            return None
