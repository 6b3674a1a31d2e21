"""`harness mcp`'s children: at most `--max-runs` alive, a bounded queue, each run contained.

    Slots.claim(n) ──▶ Ticket (granted now, or queued; past the queue: BusyError at once)
      await ticket.wait()  the run's slots          ticket.close()  given back (or withdrawn)
    run_delegate(prepared, activity)   one child, or one turn of a kept session, in a slot:
      start ─▶ events ─▶ Activity (closed facts) ─▶ result (the deadline cancels it) ─▶
      dispose (the whole tree, shielded) ─▶ the registry closed ─▶ files changed (git)
    Runs: the delegate_start runs, owned by the server's task group (closing it disposes all)

A call cancelled by its client (`notifications/cancelled`), the server's stdin ending and a
signal all arrive as anyio cancellation: `async with run` disposes the child's tree on every
path, shielded, before the slot is given back.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections import deque
from dataclasses import dataclass, field
from typing import Final

import anyio
import anyio.abc
from subagent_core import (
    SessionRequest,
    SubagentError,
    SubagentEvent,
    SubagentResult,
    SubagentRun,
    SubagentSession,
    SubagentStartError,
)

from harness._config.paths import sessions_root
from harness._live.kept_sessions import find_session
from harness.fanout import (
    DEFAULT_VERIFY_TIMEOUT_SECONDS,
    FanoutResult,
    IsolationError,
    run_fanout,
)

from .mcp_activity import Activity
from .mcp_calls import Prepared
from .mcp_changes import files_changed, workspace_tree
from .mcp_options import ToolError
from .mcp_tools import FanoutArgs

_log = logging.getLogger("harness.mcp")

EVENTS_DRAIN_SECONDS: Final = 5.0
"""How long the last events of a settled run may take to be counted (they end with the run)."""
KEEP_SETTLED: Final = 64
"""Settled `delegate_start` runs kept for `delegate_result` (the oldest go first)."""
CANCEL_WAIT_SECONDS: Final = 30.0
"""How long `delegate_cancel` waits for the run to settle before answering anyway."""


class BusyError(ToolError):
    """Every slot is taken and the queue behind them is full."""

    def __init__(self, size: int, queued: int) -> None:
        super().__init__(
            f"harness mcp is busy: its {size} child slots are taken and {queued} calls are "
            "waiting (--max-runs, --max-queued); try again when one has finished"
        )


class Ticket:
    """A call's claim on `count` slots: granted at once or queued in arrival order."""

    def __init__(self, slots: Slots, count: int) -> None:
        self.count = count
        self._slots = slots
        self._granted = anyio.Event()
        self._closed = False

    @property
    def granted(self) -> bool:
        return self._granted.is_set()

    async def wait(self) -> None:
        """Returns once the slots are this call's."""
        await self._granted.wait()

    def close(self) -> None:
        """Gives the slots back (or leaves the queue); idempotent."""
        if not self._closed:
            self._closed = True
            self._slots.leave(self)

    def grant(self) -> None:
        self._granted.set()


class Slots:
    """`size` slots, one per live child, and a queue of at most `max_queued` waiting calls."""

    def __init__(self, size: int, max_queued: int) -> None:
        self.size = size
        self._max_queued = max_queued
        self._free = size
        self._queue: deque[Ticket] = deque()

    def claim(self, count: int = 1) -> Ticket:
        """A ticket for `count` slots (at most all of them), granted now or queued.

        Raises:
            BusyError: it would have to wait and the queue is full.
        """
        ticket = Ticket(self, max(1, min(count, self.size)))
        if not self._queue and self._free >= ticket.count:
            self._free -= ticket.count
            ticket.grant()
        elif len(self._queue) >= self._max_queued:
            raise BusyError(self.size, len(self._queue))
        else:
            self._queue.append(ticket)
        return ticket

    def leave(self, ticket: Ticket) -> None:
        if ticket.granted:
            self._free += ticket.count
        else:
            self._queue.remove(ticket)
        while self._queue and self._queue[0].count <= self._free:
            head = self._queue.popleft()
            self._free -= head.count
            head.grant()


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOutcome:
    """How one delegated run ended, with what the call reports besides the result."""

    result: SubagentResult
    timed_out: bool = False
    session: tuple[str, int] | None = None
    """The kept session's name and this call's turn."""
    files_changed: int | None = None


async def run_delegate(prepared: Prepared, activity: Activity) -> RunOutcome:
    """Runs the prepared call (its slot held by the caller) and closes its registry.

    Raises:
        ToolError: the session turned out to belong to another agent, or a turn of it runs.
    """
    activity.running()
    before = await workspace_tree(prepared.workspace)
    agent = prepared.agents[0]
    timed_out = False
    session_turn: tuple[str, int] | None = None
    async with prepared.registry:
        session: SubagentSession | None = None
        try:
            if prepared.session is None:
                run = await prepared.registry.start(agent, prepared.request)
            else:
                session, run = await _session_turn(prepared, prepared.session)
        except SubagentStartError as error:
            result = SubagentResult(stop_reason="error", diagnostic=str(error))
            if prepared.cancel.cancelled:
                result = SubagentResult(stop_reason="aborted")
        except SubagentError as error:
            raise ToolError(str(error)) from None
        else:
            async with run:
                result, timed_out = await _watch(run, activity, prepared)
                await run.dispose()
            if session is not None and prepared.session is not None:
                session_turn = (prepared.session, session.turns)
                await session.aclose()
    changed = await files_changed(before, prepared.workspace)
    return RunOutcome(
        result=result, timed_out=timed_out, session=session_turn, files_changed=changed
    )


async def _session_turn(prepared: Prepared, name: str) -> tuple[SubagentSession, SubagentRun]:
    """The kept session `name` continued in a fresh child (or opened), and this call's turn."""
    request = prepared.request
    root = sessions_root()
    agent = prepared.agents[0]
    session_request = SessionRequest(
        cwd=request.cwd,
        cancel=request.cancel,
        label=name,
        allow_writes=request.allow_writes,
        budget=request.budget,
        state_dir=root,
    )
    kept = find_session(root, name)  # again: a queued call may find it made meanwhile
    if kept is None:
        session = await prepared.registry.open_session(agent, session_request)
    elif kept.provider != agent:
        raise ToolError(f'session {name} belongs to agent "{kept.provider}"')
    else:
        session = await prepared.registry.resume_session(agent, kept.handle, session_request)
    try:
        run = await session.run(
            request.prompt, cancel=request.cancel, output_schema=request.output_schema
        )
    except BaseException:
        with anyio.CancelScope(shield=True):
            await session.aclose()
        raise
    return session, run


async def _watch(
    run: SubagentRun, activity: Activity, prepared: Prepared
) -> tuple[SubagentResult, bool]:
    """The run's result, its events counted into `activity`; the deadline cancels it."""
    result: SubagentResult | None = None
    timed_out = False
    async with anyio.create_task_group() as tg:

        async def count_events() -> None:
            async for event in run.events():
                activity.observe(event)

        tg.start_soon(count_events)
        deadline = prepared.timeout_seconds
        with anyio.move_on_after(math.inf if deadline is None else deadline):
            result = await run.result()
        if result is None:
            timed_out = True
            prepared.cancel.cancel()
            result = await run.result()
        tg.cancel_scope.deadline = anyio.current_time() + EVENTS_DRAIN_SECONDS
    assert result is not None
    return result, timed_out


@dataclass(slots=True, kw_only=True)
class BackgroundRun:
    """One `delegate_start` run: its facts while it works, its outcome once settled."""

    run_id: str
    prepared: Prepared
    activity: Activity
    ticket: Ticket
    outcome: RunOutcome | None = None
    refused: str | None = None
    """The run could not go on (a `ToolError` met once it had its slot)."""
    done: anyio.Event = field(default_factory=anyio.Event)


class Runs:
    """The server's runs: its slots, and the `delegate_start` runs it owns."""

    def __init__(self, slots: Slots, tg: anyio.abc.TaskGroup) -> None:
        self.slots = slots
        self._tg = tg
        self._runs: dict[str, BackgroundRun] = {}

    def start(self, prepared: Prepared) -> BackgroundRun:
        """Queues the prepared call as a background run.

        Raises:
            BusyError: no slot and no room in the queue.
        """
        ticket = self.slots.claim(1)
        record = BackgroundRun(
            run_id=f"run-{secrets.token_hex(8)}",
            prepared=prepared,
            activity=Activity(),
            ticket=ticket,
        )
        self._forget_settled()
        self._runs[record.run_id] = record
        self._tg.start_soon(self._drive, record)
        return record

    def get(self, run_id: str) -> BackgroundRun:
        """Raises: ToolError: no such run (never started here, or long settled)."""
        record = self._runs.get(run_id)
        if record is None:
            raise ToolError(f"no run {run_id} on this server (it may have been forgotten)")
        return record

    async def cancel(self, record: BackgroundRun) -> None:
        """Cancels the run (queued or running) and waits, bounded, for it to settle."""
        record.prepared.cancel.cancel()
        with anyio.move_on_after(CANCEL_WAIT_SECONDS):
            await record.done.wait()

    async def _drive(self, record: BackgroundRun) -> None:
        prepared = record.prepared
        try:
            with prepared.cancel.cancel_scope():
                await record.ticket.wait()
            if not record.ticket.granted:
                record.outcome = RunOutcome(result=SubagentResult(stop_reason="aborted"))
                return
            record.outcome = await run_delegate(prepared, record.activity)
        except ToolError as error:
            record.refused = str(error)
        except Exception:
            # Our own fault, never the child's: the cause goes to the host log only.
            _log.exception("a background run failed")
            record.refused = "the run failed inside the server (see its log)"
        finally:
            record.ticket.close()
            record.activity.settled()
            record.done.set()

    def _forget_settled(self) -> None:
        settled = [key for key, run in self._runs.items() if run.done.is_set()]
        for key in settled[: max(0, len(settled) - KEEP_SETTLED + 1)]:
            del self._runs[key]


class _FanoutActivity:
    """The fan-out's children's events, counted into one `Activity` (closed facts only)."""

    def __init__(self, activity: Activity) -> None:
        self._activity = activity

    def started(self, number: int, agent: str) -> None:
        return None

    def event(self, number: int, event: SubagentEvent) -> None:
        self._activity.observe(event)

    def finished(self, outcome: FanoutResult) -> None:
        return None


async def run_fanout_call(
    prepared: Prepared, args: FanoutArgs, activity: Activity, concurrency: int
) -> list[FanoutResult]:
    """The fan-out of `args` on the prepared registry, `concurrency` children at once.

    Raises:
        ToolError: isolation could not be set up.
    """
    activity.running()
    verify_timeout = args.verify_timeout_seconds or DEFAULT_VERIFY_TIMEOUT_SECONDS
    async with prepared.registry:
        try:
            return await run_fanout(
                prepared.registry,
                list(args.agents),
                prepared.request,
                isolation=args.isolation,
                concurrency=concurrency,
                timeout_seconds=args.timeout_seconds,
                observer=_FanoutActivity(activity),
                verify=args.verify,
                protect=args.protect,
                verify_timeout_seconds=verify_timeout,
            )
        except IsolationError as error:
            raise ToolError(f"fanout: {error}".replace("--isolation", "isolation")) from None
        except ValueError as error:
            raise ToolError(f"fanout: {error}") from None
