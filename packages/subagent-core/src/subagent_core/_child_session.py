"""`ChildSession`: one child's whole life in one owner task, for one turn or many.

Every out-of-process provider makes the same promise: a start that fails or is cancelled
leaves nothing behind, every wait is bounded (the startup deadline, then each turn's idle
deadline, the child's exit, the cancel signal, the stop request), a turn settles exactly once,
and ending the child runs the bounded, shielded teardown ladder until the tree is gone. This
module keeps that promise once; a provider writes only its protocol, as `ChildProtocol` hooks
(`handshake`, `begin_turn` → `TurnDriver.run` / `interrupt`, `close_child`).

    holder (any task)                      owner (one OwnedTask for the child's life)
    ─────────────────                      ──────────────────────────────────────────
    begin_turn(prompt) ──queue──▶          spawn → handshake (startup deadline)
    open(cancel) ◀─────── ready ─────────  ┐
    TurnRun.result() ◀── settled ───────── │ for each queued turn: driver.run() raced against
    TurnRun.dispose() ─── stop turn ─────▶ │ cancel, idle, exit, stop; settle; interrupt if the
    aclose() ──────────── stop ──────────▶ ┘ child did not end the turn itself
                                           close_child → ladder (EOF, TERM, KILL) → gone

The owner owns the managed process, the provider's service tasks (readers, permission
workers: `ChildLink.start_soon`) and the child's one waiter (its exit and the running turn's
idle deadline: `ChildWatch`), so each resource has one owner even though the holder calls in
from other tasks; the two sides talk only through events. A warm pool drives its child's
session while the child waits, parked before the handshake until `open()` (`drive`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import anyio

from ._cancel import CancelSignal
from ._child_config import ChildConfigFields, teardown_of
from ._child_protocol import (
    INTERRUPT_SECONDS,
    OUTCOME_WAIT_SECONDS,
    ChildFailure,
    ChildLink,
    ChildProtocol,
)
from ._child_watch import ChildWatch
from ._diagnostics import PermissionProtocol
from ._errors import SubagentError, SubagentStartError, compose_start_error
from ._failure import Failure, teardown_line
from ._open import open_managed_process
from ._owned_task import OwnedTask
from ._permission import PermissionSetting
from ._process import ManagedProcess, SpawnError
from ._teardown import Teardown, run_ladder
from ._turn import Turn, TurnRun
from ._types import Budget, SubagentRequest, Usage


class ChildSession:
    """Owns one child from spawn to the end of its ladder, and runs its turns one at a time."""

    def __init__(
        self,
        protocol: ChildProtocol,
        *,
        provider: str,
        teardown: Teardown,
        startup_timeout_seconds: float | None,
        idle_timeout_seconds: float | None,
        permission: PermissionSetting,
        permission_protocol: PermissionProtocol,
        reject_with_option: bool = True,
        extra_dispose_seconds: float = 0.0,
        log: logging.Logger | None = None,
    ) -> None:
        self._protocol = protocol
        self.provider = provider
        self._teardown = teardown
        self._startup = startup_timeout_seconds
        self._idle_seconds = idle_timeout_seconds
        self._permission: PermissionSetting = permission
        self._permission_protocol: PermissionProtocol = permission_protocol
        self._reject_with_option = reject_with_option
        self._log = log or logging.getLogger("subagent_core")
        # The ladder may run twice (ours, then the process block's if the tree was not
        # confirmed gone), plus the bounded interrupt and goodbye.
        self._dispose_bound = (
            2 * teardown.total_seconds
            + INTERRUPT_SECONDS
            + protocol.close_seconds
            + extra_dispose_seconds
            + 4.0
        )
        self._open_cancel = CancelSignal()
        self._opened = anyio.Event()
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._wake = anyio.Event()
        self._queued: Turn | None = None
        self.current_turn: Turn | None = None
        self._timed_turn: Turn | None = None
        """The turn whose driver runs now (the idle watcher's concern)."""
        self._call_scope: anyio.CancelScope | None = None
        self._proc: ManagedProcess | None = None
        self._link: ChildLink | None = None
        self._owner: OwnedTask | None = None
        self._start_error: SubagentStartError | None = None
        self._start_cause: BaseException | None = None
        self._teardown_line: str | None = None
        self._closed = False
        self._disposed = False
        self._dispose_text: str | None = None
        self.turns = 0
        """How many turns were begun."""
        self.start_failure: Failure | None = None
        """What failed the start, when it failed with a known fact."""

    @classmethod
    def configured(
        cls,
        protocol: ChildProtocol,
        config: ChildConfigFields,
        *,
        permission_protocol: PermissionProtocol,
        log: logging.Logger,
        reject_with_option: bool = True,
        extra_dispose_seconds: float = 0.0,
    ) -> ChildSession:
        """The lifecycle of `protocol`'s child with a provider config's name, graces,
        deadlines and permission setting (the fields `check_child_config` checked).

        A config without a `permission` field belongs to a wire that carries no permission
        requests, so its turns' gate, never asked, answers `reject`.
        """
        permission: PermissionSetting = getattr(config, "permission", "reject")
        return cls(
            protocol,
            provider=config.provider_name,
            teardown=teardown_of(config),
            startup_timeout_seconds=config.startup_timeout_seconds,
            idle_timeout_seconds=config.idle_timeout_seconds,
            permission=permission,
            permission_protocol=permission_protocol,
            reject_with_option=reject_with_option,
            extra_dispose_seconds=extra_dispose_seconds,
            log=log,
        )

    # -- holder side ---------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """True while the child is up and takes turns."""
        return self._ready.is_set() and self._start_error is None and not self._closed

    def begin_turn(
        self,
        prompt: str,
        *,
        cancel: CancelSignal | None = None,
        output_schema: dict[str, Any] | None = None,
        budget: Budget | None = None,
        spent: Usage | None = None,
    ) -> Turn:
        """Queues a turn; the owner runs it as soon as the child is ready.

        A turn may begin once the previous one has settled: the owner finishes the previous
        one first (an interrupt still owed to the child, say), then runs this one.

        Raises:
            SubagentError: a turn has not settled yet (`TURN_IN_PROGRESS`), or the child has
                ended (`SESSION_CLOSED`).
        """
        if not self._takes_turns():
            raise SubagentError("SESSION_CLOSED", "the session's child has ended")
        current = self.current_turn
        if self._queued is not None or (current is not None and not current.settled):
            raise SubagentError("TURN_IN_PROGRESS", "a turn of this session is still running")
        turn = self._new_turn(
            prompt, cancel=cancel, output_schema=output_schema, budget=budget, spent=spent
        )
        self._queued = turn
        self.turns += 1
        self._wake.set()
        return turn

    def _takes_turns(self) -> bool:
        return not (self._closed or self._stop.is_set() or self._start_error is not None)

    def _new_turn(
        self,
        prompt: str,
        *,
        cancel: CancelSignal | None,
        output_schema: dict[str, Any] | None,
        budget: Budget | None,
        spent: Usage | None,
    ) -> Turn:
        turn = Turn(
            provider=self.provider,
            prompt=prompt,
            output_schema=output_schema,
            cancel=cancel or CancelSignal(),
            permission=self._permission,
            permission_protocol=self._permission_protocol,
            reject_with_option=self._reject_with_option,
            idle_seconds=self._idle_seconds,
            stage=self._protocol.turn_stage,
            budget=budget,
            spent=spent,
        )
        turn.on_over_budget = self._interrupt_current
        return turn

    def run_of(self, turn: Turn, *, ends_session: bool) -> TurnRun:
        """The published handle of `turn` (a one-shot run ends the child when disposed)."""
        return TurnRun(self, turn, ends_session=ends_session)

    async def one_shot(
        self, request: SubagentRequest, *, owner: OwnedTask | None = None
    ) -> TurnRun:
        """A one-shot run: `request`'s prompt as the child's one turn, sent once the child is
        up, published as a run whose dispose ends the child (`owner` as for `open`).

        The turn and its handle are built while the handshake's first request is on its way.

        Raises:
            SubagentStartError: as `open`.
        """
        runs: list[TurnRun] = []

        def begin() -> None:
            turn = self._new_turn(
                request.prompt,
                cancel=request.cancel,
                output_schema=request.output_schema,
                budget=request.budget,
                spent=None,
            )
            if self._takes_turns():
                self._queued = turn
                self.turns += 1
                self._wake.set()
            else:
                turn.abort()  # the child ended before its turn was queued, as `_finish` would
                turn.mark_done()
            runs.append(self.run_of(turn, ends_session=True))

        self._start_owner(request.cancel, owner)
        await self._until_ready(begin)
        return runs[0]

    async def open(
        self, cancel: CancelSignal | None = None, *, owner: OwnedTask | None = None
    ) -> None:
        """Starts the owner and waits until the child is ready; `cancel` aborts the start.

        `owner` adopts a task that already holds a spawned child and calls `drive()` (a warm
        pool's; one that has ended already cannot, and the start fails); without it the session
        spawns its child in an owner task of its own.

        Raises:
            SubagentStartError: the child could not start; its tree was torn down first.
        """
        self._start_owner(cancel, owner)
        await self._until_ready()

    def _start_owner(self, cancel: CancelSignal | None, owner: OwnedTask | None) -> None:
        if cancel is not None:
            self._open_cancel = cancel
        self._owner = owner or OwnedTask.start(self._own, name=f"{self._log.name}.child")
        self._opened.set()
        if owner is not None and owner.done:
            self.abandon()

    async def _until_ready(self, meanwhile: Callable[[], None] | None = None) -> None:
        """Waits for the owner's handshake, giving the owner a pass first twice: before
        `meanwhile` (the handshake's first request goes out while the holder builds) and once
        the child is ready (a one-shot's prompt goes out before the holder resumes)."""
        try:
            if meanwhile is not None:
                await anyio.lowlevel.checkpoint()
                meanwhile()
            await self._ready.wait()
            await anyio.lowlevel.checkpoint()
        except BaseException:
            # The caller was cancelled mid-start: roll back before letting the cancel through.
            with anyio.CancelScope(shield=True):
                self._request_stop()
                with anyio.move_on_after(self._dispose_bound):
                    await self._wait_owner()
            raise
        if self._start_error is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self._dispose_bound):
                await self._wait_owner()
            raise self._start_error from self._start_cause

    async def stop_turn(self, turn: Turn) -> None:
        """Ends `turn` (aborted if still running, the child interrupted); the child stays."""
        with anyio.CancelScope(shield=True):
            if turn.done:
                return
            turn.abort()
            turn.stop_requested = True
            if self._queued is turn:
                self._queued = None
                turn.mark_done()
                return
            if self.current_turn is turn and self._call_scope is not None:
                self._call_scope.cancel()
            with anyio.move_on_after(self._dispose_bound):
                await turn.wait_done()

    async def aclose(self) -> str | None:
        """Ends the child (memoized): `None` once the tree is gone, else the teardown line."""
        with anyio.CancelScope(shield=True):
            for turn in (self.current_turn, self._queued):
                if turn is not None:
                    turn.abort()
            self._request_stop()
            with anyio.move_on_after(self._dispose_bound):
                await self._wait_owner()
            if not self._disposed:
                self._disposed = True
                if self._owner is None or self._owner.done:
                    self._dispose_text = self._teardown_line
                else:
                    self._log.warning("%s child: teardown did not finish in time", self.provider)
                    outcome = None if self._proc is None else self._proc.outcome
                    stage = self._protocol.teardown_stage
                    self._dispose_text = teardown_line(self.provider, outcome, stage)
            return self._dispose_text

    def _interrupt_current(self) -> None:
        """Ends the running turn's driver (it settled already); the owner then interrupts."""
        if self._call_scope is not None:
            self._call_scope.cancel()

    def release(self) -> None:
        """Ends a session driven before it was opened (a warm child's, retired or found dead
        while it waited): its owner skips the handshake and runs the ladder."""
        self._request_stop()

    def _request_stop(self) -> None:
        self._stop.set()
        self._opened.set()
        self._wake.set()
        if self._call_scope is not None:
            self._call_scope.cancel()

    async def _wait_owner(self) -> None:
        if self._owner is not None:
            await self._owner.wait()

    def _fail_start(
        self,
        failure: Failure | None,
        cleanup_line: str | None,
        cause: BaseException | None,
        *,
        cancelled: bool = False,
    ) -> None:
        if self._ready.is_set():
            return
        self.start_failure = failure
        startup = None if failure is None else failure.line(self.provider)
        self._start_error = compose_start_error(
            self._protocol.kind,
            cancelled=cancelled,
            startup_line=startup,
            cleanup_line=cleanup_line,
        )
        self._start_cause = cause
        self._ready.set()

    # -- owner side ----------------------------------------------------------------------------

    async def _own(self) -> None:
        try:
            async with open_managed_process(
                self._protocol.command(), stderr=self._protocol.stderr, teardown=self._teardown
            ) as proc:
                await self.drive(proc)
        except SpawnError as error:
            self._log.info("%s child: could not spawn (%s)", self.provider, error.reason)
            # A workspace that vanished after it was checked is still a configuration fact.
            failure = (
                Failure("initialize", "configuration")
                if error.reason == "bad-cwd"
                else self._protocol.spawn_failure
            )
            self._fail_start(failure, None, error)
        finally:
            self._finish()

    async def drive(self, proc: ManagedProcess, watch: ChildWatch | None = None) -> None:
        """Drives a spawned child from its handshake to the end of its ladder.

        The owner task calls it: the session's own (`open()` without `owner`), or the task
        that spawned the child ahead of need (a warm pool), whose block owns the process. A
        block that already runs the child's waiter (`watching_child`) passes its watch;
        without one the session runs the waiter itself. Driven before it is opened (a warm
        pool's, while the child waits), it sets up all but the handshake and parks until
        `open()` (the handshake begins) or `release()` (the ladder runs).
        """
        self._proc = proc
        try:
            await self._with_child(proc, watch)
        except Exception as error:
            # A bug of ours must neither hang nor crash the parent: settle with safe facts.
            self._log.exception("%s child: unexpected failure", self.provider)
            ready = self._ready.is_set()
            stage = self._protocol.turn_stage if ready else self._stage()
            self._fail_start(Failure(stage, "unknown"), None, error)
            for turn in (self.current_turn, self._queued):
                if turn is not None:
                    turn.fail(Failure(self._protocol.turn_stage, "unknown"))
        finally:
            self._finish()

    def abandon(self) -> None:
        """Fails a start whose child was lost before it could be driven (a warm pool's)."""
        self._fail_start(Failure(self._stage(), "unknown"), None, None)
        self._finish()

    def _stage(self) -> str:
        return "initialize" if self._link is None else self._link.stage

    def _finish(self) -> None:
        """The owner's last step (idempotent): nothing waits on the child any more."""
        self._closed = True
        if not self._ready.is_set():
            self._fail_start(Failure(self._stage(), "unknown"), None, None)
        for turn in (self.current_turn, self._queued):
            if turn is not None:
                turn.abort()
                turn.mark_done()
        self._queued = None

    async def _with_child(self, proc: ManagedProcess, watch: ChildWatch | None) -> None:
        failure: Failure | None = None
        cause: BaseException | None = None
        cancelled = False
        gone = False
        async with anyio.create_task_group() as services:
            if watch is None:
                watch = ChildWatch()
                services.start_soon(watch.follow, proc)
            if self._idle_seconds is not None:
                watch.check_every(self._check_idle)
            link = self._link = ChildLink(
                lambda: self.current_turn,
                proc,
                services,
                watch,
                exit_category=self._protocol.exit_category,
            )
            try:
                if not self._opened.is_set():
                    await self._opened.wait()  # parked: driven before it was opened
                watch.listener = self._on_exit
                if self._stop.is_set():
                    cancelled = True  # released, or the opener gave up: no handshake
                else:
                    failure, cause, cancelled = await self._open_child(link)
                if failure is None and not cancelled:
                    self._ready.set()
                    await self._serve_turns(link)
            finally:
                with anyio.CancelScope(shield=True):
                    if self._ready.is_set() and self._start_error is None and not link.exited:
                        with anyio.move_on_after(self._protocol.close_seconds):
                            await self._protocol.close_child(link)
                    gone = await self._end(link)
                services.cancel_scope.cancel()
        stage = self._protocol.teardown_stage
        cleanup = None if gone else teardown_line(self.provider, proc.outcome, stage)
        if not self._ready.is_set():
            self._fail_start(failure, cleanup, cause, cancelled=cancelled)
        else:
            self._teardown_line = cleanup

    def _on_exit(self) -> None:
        """The leader exited: the call in flight may still finish, for a short while."""
        scope = self._call_scope
        if scope is not None:
            # A reply written just before exiting is still delivered; no longer than this.
            scope.deadline = min(scope.deadline, anyio.current_time() + OUTCOME_WAIT_SECONDS)

    def _enter_call(self, scope: anyio.CancelScope, link: ChildLink) -> None:
        self._call_scope = scope
        if self._stop.is_set():
            scope.cancel()
        if link.exited:
            scope.deadline = min(scope.deadline, anyio.current_time() + OUTCOME_WAIT_SECONDS)

    async def _open_child(
        self, link: ChildLink
    ) -> tuple[Failure | None, BaseException | None, bool]:
        """The handshake under the startup deadline; `(failure, cause, cancelled)`."""
        startup = self._startup
        deadline = math.inf if startup is None else anyio.current_time() + startup
        done = False
        with self._open_cancel.cancel_scope(deadline=deadline) as scope:
            self._enter_call(scope, link)
            try:
                await self._protocol.handshake(link)
                done = True
            except ChildFailure as error:
                return error.failure, error.__cause__, False
            finally:
                self._call_scope = None
        if done:
            return None, None, False
        if self._stop.is_set() or self._open_cancel.cancelled:
            return None, None, True
        if link.exited:
            return link.exit_failure(link.stage), None, False
        self._log.info("%s child: the handshake outlived the startup deadline", self.provider)
        return Failure(link.stage, "timeout"), None, False

    async def _serve_turns(self, link: ChildLink) -> None:
        while not self._stop.is_set():
            turn = self._queued
            if turn is None:
                await self._wake.wait()
                self._wake = anyio.Event()
                continue
            self._queued = None
            self.current_turn = turn
            try:
                await self._run_turn(link, turn)
            finally:
                turn.mark_done()

    async def _run_turn(self, link: ChildLink, turn: Turn) -> None:
        stage = self._protocol.turn_stage
        if turn.settled:
            return  # disposed before it began
        if link.exited:
            turn.fail(link.exit_failure(self._protocol.exit_stage))
            return
        driver = self._protocol.begin_turn(link, turn)
        turn.driver = driver
        turn.idle.touch()
        with turn.cancel.cancel_scope() as scope:
            self._enter_call(scope, link)
            if turn.stop_requested:
                scope.cancel()
            self._timed_turn = turn
            try:
                await driver.run()
            except ChildFailure as error:
                turn.fail(error.failure)
            finally:
                self._call_scope = None
                self._timed_turn = None
        if not turn.settled:
            if turn.cancel.cancelled or turn.stop_requested or self._stop.is_set():
                turn.abort()
            elif turn.idle_expired:
                self._log.info("%s child: silent past idle_timeout_seconds", self.provider)
                turn.fail(Failure(stage, "timeout"))
            elif link.exited:
                turn.fail(link.exit_failure(self._protocol.exit_stage))
            else:
                self._log.warning("%s child: the turn ended unsettled", self.provider)
                turn.fail(Failure(stage, "unknown"))
        if not driver.finished and not link.exited and not self._stop.is_set():
            with anyio.move_on_after(INTERRUPT_SECONDS, shield=True):
                await driver.interrupt()

    def _check_idle(self) -> float:
        """The idle deadline, run by the child's waiter: ends the running turn's call once the
        child was silent for the whole bound (pauses not counted); returns when to look again.
        No turn wakes the waiter: it looks at most a bound apart, and a turn begun meanwhile
        cannot expire sooner."""
        seconds = self._idle_seconds
        assert seconds is not None
        turn = self._timed_turn
        if turn is None or turn.idle_expired:
            return seconds
        left = turn.idle.remaining()
        if left > 0:
            return left
        turn.idle_expired = True
        if self._call_scope is not None:
            self._call_scope.cancel()
        return seconds

    async def _end(self, link: ChildLink) -> bool:
        """The ladder; stdout is drained unless the protocol still reads it. An EOF the goodbye
        already sent (`ChildLink.close_stdin`) has had part of its grace."""
        drain = not self._protocol.reading()
        gone = await run_ladder(
            link.proc, self._teardown, eof_sent_at=link.eof_sent_at, drain=drain
        )
        if not gone:
            self._log.warning("%s child: the process tree is not confirmed gone", self.provider)
        return gone
