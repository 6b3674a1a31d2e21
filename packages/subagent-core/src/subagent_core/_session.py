"""Sessions: one child kept for several turns, and continued by handle after the parent exits.

A `SubagentSession` is what `SubagentRegistry.open_session` / `resume_session` return: each
`run(prompt)` is one turn with the same `result()` / `events()` / `dispose()` semantics as a
one-shot run (disposing a turn still running interrupts it; disposing a settled one leaves the
session open), one turn at a time, and only `aclose()` ends the child. `handle` is ours, a
fresh id in the parent's namespace: never the child's own session or thread id, which is
child-controlled text.

`ChildTurns` is the kit's implementation over `ChildSession`, for providers built on it: it
adds the session's usage over every turn (the record's, on a resume), the budget that usage
counts against, and the record written after each turn.
"""

from __future__ import annotations

import abc
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

import anyio

from ._cancel import CancelSignal
from ._child_session import ChildSession
from ._diagnostics import failure_line
from ._errors import ChildKind, SubagentError, SubagentStartError
from ._failure import Failure
from ._run import SubagentProvider, SubagentRun
from ._session_store import SessionSlot
from ._types import SessionRequest, SubagentResult, Usage, add_usage
from ._workspace import start_preamble


class SubagentSession(abc.ABC):
    """A child kept for several turns; the holder must close it (`async with` does)."""

    handle: str
    """Ours, opaque: resume with it (when `resumable`); never the child's own id."""

    @property
    @abc.abstractmethod
    def usage(self) -> Usage | None:
        """What every turn so far consumed, resumed sessions' earlier turns included."""

    @property
    @abc.abstractmethod
    def turns(self) -> int:
        """How many turns this session has had, over every process that ran it."""

    @property
    @abc.abstractmethod
    def resumable(self) -> bool:
        """True when the session is kept on disk and `handle` can be resumed."""

    @abc.abstractmethod
    async def run(
        self,
        prompt: str,
        *,
        cancel: CancelSignal | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> SubagentRun:
        """Starts one turn and returns its run (the child keeps the conversation).

        Raises:
            SubagentError: a turn is still running (`TURN_IN_PROGRESS`), the session is
                closed (`SESSION_CLOSED`), or a gated field is unsupported.
        """

    @abc.abstractmethod
    async def aclose(self) -> str | None:
        """Ends the child (memoized): `None` once its tree is gone, else the teardown line."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with anyio.CancelScope(shield=True):
            await self.aclose()


@runtime_checkable
class SessionProvider(SubagentProvider, Protocol):
    """A provider that keeps a child for several turns (`Capabilities.sessions`) and may
    continue one by handle in a fresh child (`Capabilities.resume`)."""

    async def open_session(self, request: SessionRequest, slot: SessionSlot) -> SubagentSession:
        """Starts a child for a new session held in `slot` (its handle, record, lock).

        Raises:
            SubagentStartError: the child could not start; everything was rolled back first.
        """
        ...

    async def resume_session(self, request: SessionRequest, slot: SessionSlot) -> SubagentSession:
        """Starts a fresh child that continues the session recorded in `slot`.

        Raises:
            SubagentStartError: `resume-miss` when the child no longer knows the session,
                `configuration` for another workspace; everything was rolled back first.
        """
        ...


class SlotSession(SubagentSession):
    """A session held in a `SessionSlot`: its handle, its usage over every turn (the record's,
    on a resume), its turn count, and the record written after each turn."""

    def __init__(self, slot: SessionSlot) -> None:
        self.handle = slot.handle
        self._slot = slot
        self._usage = slot.record.usage
        self._turns = slot.record.turns

    @property
    def usage(self) -> Usage | None:
        return self._usage

    @property
    def turns(self) -> int:
        return self._turns

    @property
    def resumable(self) -> bool:
        return self._slot.resumable

    @property
    def slot(self) -> SessionSlot:
        """The handle's place (its record and lock)."""
        return self._slot

    def record_turn(self, usage: Usage | None, **changes: object) -> bool:
        """After a turn: adds its `usage` to the session's totals and writes the record a
        resume reads (totals, turns, last use, and `changes`). False when the record could not
        be written: the live session goes on, and a later turn writes it again."""
        self._usage = add_usage(self._usage, usage)
        slot = self._slot
        slot.record = slot.record.with_usage(self._usage)
        try:
            slot.update(turns=self._turns, last_used=time.time(), **changes)
        except OSError:
            return False
        return True


class ChildTurns(SlotSession):
    """A session over the kit's `ChildSession`: turns, usage, budget and record.

    `turn_output_schema=False` is for a child whose output schema is fixed when it starts (a
    command-line option): a session turn cannot ask for one, so it is refused before it is
    sent.
    """

    def __init__(
        self,
        child: ChildSession,
        slot: SessionSlot,
        request: SessionRequest,
        *,
        turn_output_schema: bool = True,
    ) -> None:
        super().__init__(slot)
        self._child = child
        self._request = request
        self._turn_output_schema = turn_output_schema
        self._closed = False

    async def run(
        self,
        prompt: str,
        *,
        cancel: CancelSignal | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> SubagentRun:
        if output_schema is not None and not self._turn_output_schema:
            raise SubagentError(
                "UNSUPPORTED_CAPABILITY",
                f'subagent provider "{self._child.provider}" takes an output schema in a '
                "one-shot run only, not in a session turn",
            )
        budget = self._request.budget
        turn = self._child.begin_turn(
            prompt,
            cancel=cancel,
            output_schema=output_schema,
            budget=budget,
            spent=self._usage,
        )
        self._turns += 1
        turn.on_settle.append(self._note)
        if budget is not None and budget.crossed_by(self._usage):
            turn.fail(Failure(turn.stage, "budget"))  # spent already: the child is not asked
        return self._child.run_of(turn, ends_session=False)

    def _note(self, result: SubagentResult) -> None:
        """After each turn: the session's totals, and the record a resume reads."""
        self.record_turn(result.usage)

    async def aclose(self) -> str | None:
        with anyio.CancelScope(shield=True):
            try:
                return await self._child.aclose()
            finally:
                if not self._closed:
                    self._closed = True
                    self._slot.release()


def session_workspace(
    kind: ChildKind,
    provider: str,
    request: SessionRequest,
    configured_cwd: Path | None,
    slot: SessionSlot,
    *,
    resume: bool,
) -> Path:
    """The checks before a session's spawn; returns the child's workspace.

    A new session records its workspace. A resume must find the child's own session id in the
    record and run in the recorded workspace: the child CLIs accept another cwd, so this is
    where a conversation is kept from moving to a folder it never saw.

    Raises:
        SubagentStartError: as `start_preamble`; `resume-miss` when the record holds no child
            session; `configuration` for another workspace.
    """
    cwd = start_preamble(
        kind, provider, request.turn_request("", cancel=request.cancel), configured_cwd
    )
    record = slot.record
    if not resume:
        slot.update(cwd=str(cwd))
        return cwd
    if record.child_session is None:
        line = failure_line(provider, "initialize", "resume-miss")
        raise SubagentStartError(line, line)
    if record.cwd != str(cwd):
        line = failure_line(provider, "initialize", "configuration")
        raise SubagentStartError(line, line)
    return cwd
