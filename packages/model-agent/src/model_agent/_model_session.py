"""Sessions of the `model` provider: one conversation kept for several turns, in this process.

A `model` session is the child's conversation history, not a process. Each turn runs a fresh
agent (built by the provider's factory, for the turn's own output schema) on the history the
previous turn left, in an `OwnedTask` of its own, and keeps the history it returns, so turn 2's
model request carries turn 1's messages. Turns are the kit's `Turn` (settle once, events, the
budget counted on each usage report) published as the kit's `TurnRun` (`result()`,
`events()`, `dispose()`), as a `ChildSession`'s are; the package AGENTS.md says why there is no
`ChildSession` here.

A resumable session (a state dir) writes the history after each turn into the handle's child
state folder (`history.json`: at most `MAX_HISTORY_BYTES`, written atomically, 0600), before
the turn settles; `resume_session` continues from it with fresh agents. A history that is
missing, too large or not a well-formed conversation is a `resume-miss`, never a fresh start;
a turn whose history could not be stored removes the stored one, so a later resume misses
instead of continuing from an older turn.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final

import anyio
from subagent_core import (
    CancelSignal,
    SessionRequest,
    SubagentError,
    SubagentRun,
    Usage,
    UsageEvent,
)
from subagent_core.kit import (
    Failure,
    OwnedTask,
    SessionSlot,
    SlotSession,
    Turn,
    TurnDriver,
    TurnRun,
    failure_line,
)

from ._child_events import core_event
from ._config import AgentConfig
from ._events import AgentEvent, AgentObserver, TextDelta, ToolStarted
from ._history import ChatMessage, parse_history
from ._model_run import (
    ANSWER_STAGE,
    DISPOSE_WAIT_SECONDS,
    MODEL_PROVIDER,
    ChildAgent,
    stop_reason_of,
)
from ._result import OUTPUT_SCHEMA_ERROR, AgentResult

_log = logging.getLogger("model_agent")

HISTORY_FILE: Final = "history.json"
"""The stored conversation in a resumable session's child state folder."""

MAX_HISTORY_BYTES: Final = 64 * 1024 * 1024
"""The most history a session stores or reads back (the agent compacts a conversation past
its `context_budget_chars`, so only a runaway turn comes near it)."""

AgentBuilder = Callable[[AgentConfig, AgentObserver], ChildAgent]
"""Builds the agent of one turn, whose events go to the given observer."""


def store_history(folder: Path, history: Sequence[ChatMessage]) -> bool:
    """Writes `history` into `folder` atomically (a 0600 file renamed over the old one).

    Returns False, with no history left stored, when it is over `MAX_HISTORY_BYTES`.

    Raises:
        OSError: the folder cannot be written.
    """
    data = json.dumps(list(history), ensure_ascii=False).encode("utf-8")
    target = folder / HISTORY_FILE
    if len(data) > MAX_HISTORY_BYTES:
        target.unlink(missing_ok=True)
        return False
    fd, temporary = tempfile.mkstemp(prefix=".history-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o600)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return True


def load_history(folder: Path) -> tuple[ChatMessage, ...] | None:
    """The history stored in `folder`, or `None`: missing, unreadable, too large, or not a
    well-formed conversation."""
    try:
        with open(folder / HISTORY_FILE, "rb") as stream:
            data = stream.read(MAX_HISTORY_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_HISTORY_BYTES:
        return None
    try:
        return parse_history(json.loads(data))
    except (ValueError, RecursionError):  # bad UTF-8 or JSON, a HistoryError, absurd nesting
        return None


class ModelSession(SlotSession):
    """A `model` child's conversation, kept for several turns (see the module doc)."""

    def __init__(
        self,
        build: AgentBuilder,
        config: AgentConfig,
        slot: SessionSlot,
        request: SessionRequest,
        history: tuple[ChatMessage, ...],
        *,
        observer: AgentObserver | None = None,
    ) -> None:
        super().__init__(slot)
        self._build = build
        self._config = config
        self._budget = request.budget
        self._history = history
        self._observer = observer
        self._drivers: list[_ModelTurn] = []
        """Turns whose task has not ended yet (the newest last)."""
        self._closed = False
        self._close_lock = anyio.Lock()
        self._close_text: str | None = None
        self._close_done = False

    async def run(
        self,
        prompt: str,
        *,
        cancel: CancelSignal | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> SubagentRun:
        """Starts one turn on the conversation so far.

        Raises:
            SubagentError: `SESSION_CLOSED` after `aclose()`, `TURN_IN_PROGRESS` while the
                previous turn has not settled (one settled but still winding down is waited
                for by the next turn itself).
        """
        if self._closed:
            raise SubagentError("SESSION_CLOSED", "the session has been closed")
        self._drivers = [driver for driver in self._drivers if not driver.ended]
        previous = self._drivers[-1] if self._drivers else None
        if previous is not None and not previous.turn.settled:
            raise SubagentError("TURN_IN_PROGRESS", "a turn of this session is still running")
        turn = Turn(
            provider=MODEL_PROVIDER,
            prompt=prompt,
            output_schema=output_schema,
            cancel=cancel or CancelSignal(),
            # The agent asks no permission through the seam (its config's `approve` does), so
            # the turn's gate is never asked.
            permission="reject",
            permission_protocol="ACP",
            reject_with_option=True,
            idle_seconds=None,
            stage=ANSWER_STAGE,
            budget=self._budget,
            spent=self._usage,
        )
        driver = _ModelTurn(self, turn)
        turn.driver = driver
        turn.on_over_budget = driver.stop.cancel
        self._turns += 1
        self._drivers.append(driver)
        after = None if previous is None else previous.task
        driver.task = OwnedTask.start(
            partial(self._drive, driver, after), name=f"model_agent.session.{self.handle}"
        )
        return TurnRun(self, turn, ends_session=False)

    async def _drive(self, driver: _ModelTurn, previous: OwnedTask | None) -> None:
        """One turn's whole life: after the previous turn's agent has ended, run the agent."""
        turn = driver.turn
        try:
            if previous is not None:
                await previous.wait()
            budget = turn.budget
            turn.spent = self._usage  # the previous turn's last report is counted by now
            if driver.stop.cancelled or self._closed:
                turn.abort()
            elif budget is not None and budget.crossed_by(self._usage):
                turn.fail(Failure(ANSWER_STAGE, "budget"))  # spent already: no model request
            else:
                await driver.run()
                return
            self.note(None, stored=None)
        finally:
            turn.mark_done()

    def agent_for(self, driver: _ModelTurn) -> ChildAgent:
        """The agent of one turn: the session's config with the turn's output schema."""
        schema = driver.turn.output_schema
        return self._build(dataclasses.replace(self._config, output_schema=schema), driver.observe)

    @property
    def history(self) -> tuple[ChatMessage, ...]:
        """The conversation so far (what the next turn's agent starts from)."""
        return self._history

    @property
    def forward(self) -> AgentObserver | None:
        """The provider's observer of every child's events."""
        return self._observer

    async def keep(self, outcome: AgentResult) -> None:
        """After a turn's agent ended: the conversation, the totals, the stored history and the
        record, all before the turn settles (a holder that then exits can resume it)."""
        self._history = outcome.history
        stored: bool | None = None
        if self._slot.resumable:
            stored = await anyio.to_thread.run_sync(self._store, self._history)
        self.note(outcome.usage, stored=stored)

    def _store(self, history: tuple[ChatMessage, ...]) -> bool:
        """Stores the history; on any failure none is left stored (a resume then misses)."""
        try:
            folder = self._slot.child_state
            if folder is not None and store_history(folder, history):
                return True
        except OSError:
            pass
        _log.warning("model session: the history could not be stored")
        with contextlib.suppress(OSError):
            folder = self._slot.child_state
            if folder is not None:
                (folder / HISTORY_FILE).unlink(missing_ok=True)
        return False

    def note(self, usage: Usage | None, *, stored: bool | None) -> None:
        """The record after a turn: totals, turns, and whether a history can be resumed."""
        changes: dict[str, object] = {}
        if stored is not None:
            changes["child_session"] = HISTORY_FILE if stored else None
        if not self.record_turn(usage, **changes):
            _log.info("model session: the record could not be written")  # the next turn retries

    # -- the turn handle's owner -------------------------------------------------------------

    async def stop_turn(self, turn: Turn) -> None:
        """Ends `turn` (aborted if still running); its agent stops and is waited for."""
        with anyio.CancelScope(shield=True):
            turn.abort()
            turn.stop_requested = True
            for driver in self._drivers:
                if driver.turn is turn:
                    driver.stop.cancel()
                    await _ended(driver.task)

    async def aclose(self) -> str | None:
        """Stops a running turn and waits for its agent (bounded); memoized.

        Returns None once every agent has ended, else the teardown line.
        """
        with anyio.CancelScope(shield=True):
            async with self._close_lock:
                if not self._close_done:
                    self._closed = True
                    for driver in self._drivers:
                        driver.turn.abort()
                        driver.stop.cancel()
                    gone = [await _ended(driver.task) for driver in self._drivers]
                    if not all(gone):
                        self._close_text = failure_line(MODEL_PROVIDER, "teardown", "unknown")
                    self._slot.release()
                    self._close_done = True
        return self._close_text


async def _ended(task: OwnedTask | None) -> bool:
    """Waits for a turn's task, bounded; past the bound it is cancelled (its shielded cleanups
    still run) and waited for once more. True when it ended."""
    if task is None:
        return True
    with anyio.move_on_after(DISPOSE_WAIT_SECONDS):
        await task.wait()
    if not task.done:
        task.cancel()
        with anyio.move_on_after(DISPOSE_WAIT_SECONDS):
            await task.wait()
    return task.done


class _ModelTurn(TurnDriver):
    """One turn's agent run and what it showed, reported into the kit's `Turn`."""

    def __init__(self, session: ModelSession, turn: Turn) -> None:
        self._session = session
        self.turn = turn
        self.stop = turn.cancel.child()
        """The agent's cancel: the turn's own, or alone on dispose, the budget and aclose."""
        self.task: OwnedTask | None = None
        self._shown: list[str] = []
        self._reported: Usage | None = None
        self._outcome: AgentResult | None = None

    @property
    def ended(self) -> bool:
        """True once the turn's task has ended (its agent with it)."""
        return self.task is not None and self.task.done

    @property
    def output(self) -> str:
        """The answer once the agent ended, else the text shown in its current round."""
        if self._outcome is not None:
            return self._outcome.output
        return "".join(self._shown)

    @property
    def usage(self) -> Usage | None:
        if self._outcome is not None:
            return self._outcome.usage
        return self._reported

    def observe(self, event: AgentEvent) -> None:
        """The agent's observer: the turn's events and the text of its current round (a tool
        call starting means that round's text was not the answer)."""
        if isinstance(event, TextDelta):
            self._shown.append(event.text)
        elif isinstance(event, ToolStarted):
            self._shown.clear()
        published = core_event(event)
        if published is not None:
            self.turn.publish(published)
        forward = self._session.forward
        if forward is not None:
            forward(event)

    def count(self, usage: Usage) -> None:
        """A usage report (the turn's total so far), counted against the budget by `Turn`."""
        self._reported = usage
        self.turn.publish(UsageEvent.of(usage))

    async def run(self) -> None:
        session, turn = self._session, self.turn
        try:
            agent = session.agent_for(self)
            outcome = await agent.run(
                turn.prompt, self.stop, history=session.history, on_usage=self.count
            )
        except Exception:
            # A broken child contract: logged, never shown (its text is not safe).
            _log.exception("model session turn raised")
            session.note(None, stored=None)
            turn.settle_quietly("error")
            return
        self._outcome = outcome
        self.structured_output = outcome.structured_output
        self.finished = True
        await session.keep(outcome)
        if outcome.usage is not None and outcome.usage != self._reported:
            turn.publish(UsageEvent.of(outcome.usage))
        if outcome.status == "cancelled":
            turn.abort()
        elif outcome.status == "failed" and outcome.error == OUTPUT_SCHEMA_ERROR:
            turn.fail(Failure(ANSWER_STAGE, "output-schema"))
        else:
            turn.settle_quietly(stop_reason_of(outcome.status))
