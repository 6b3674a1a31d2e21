"""One ACP child run: spawn, handshake, prompt, settle, tear down.

A run's whole life is one owner task: it owns the managed process and the SDK connection from
spawn to the end of the ladder, so every resource has exactly one owner even though `start`,
`result` and `dispose` are called by the holder from other tasks. The holder and the owner talk
only through events: readiness, settlement, a stop request and the task's end. A cold run starts
its own owner (`ACPRun.open`); a pre-spawned child's owner hands its process to the run
(`ACPRun.drive_owned`) once `initialize` is done.

Every request is raced against the process exiting, the request's cancel signal, the stop
request and the run's deadlines (startup until publication, then the idle bound, which the
transport touches on every line the child writes); the SDK's own waits are never trusted to end. The race spawns no task: the request runs
in the owner inside a cancel scope that the cancel signal and the stop request cancel, and that
the child's exit bounds (through the one exit watcher the child has, `ExitWatch`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio
from acp.schema import InitializeResponse, NewSessionResponse, UsageUpdate
from subagent_core import (
    MessageChunk,
    StopReason,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentStartError,
)
from subagent_core.kit import (
    BoundedText,
    EventBuffer,
    IdleDeadline,
    ManagedProcess,
    OwnedTask,
    SpawnError,
    compose_start_error,
    new_run_id,
)

from ._bridge import MCPServer, PromptAnswer, Session, classify_error, discard_rest
from ._config import ACPConfig
from ._exit_watch import ExitWatch, watching_exit
from ._facts import (
    Failure,
    Stage,
    map_stop_reason,
    result_diagnostic,
    teardown_line,
)
from ._fs import WorkspaceFiles
from ._mcp import mcp_servers_for
from ._options import Step, session_options
from ._permission import Permissions
from ._race import Raced, lost_race_failure, unexpected
from ._spawn import capabilities_for, open_child, open_session
from ._terminals import Terminals
from ._transport import SessionUpdate
from ._updates import UsageTally, event_for

_log = logging.getLogger("subagent_acp")

OUTCOME_WAIT_SECONDS = 1.0
"""How long a lost connection waits for the process outcome before it is classified."""

_CANCEL_NOTIFY_SECONDS = 1.0
"""Bound on the best-effort `session/cancel` (a child not reading stdin blocks the write)."""

_CLOSE_SECONDS = 1.0

T = TypeVar("T")


class ACPRun(SubagentRun):
    """A published ACP child; `result()` never raises for child failure.

    Built for a config and a workspace, then given its request (`serve`) before `open`: a
    pre-spawned child carries a run built while it waited, so taking it builds nothing.
    """

    def __init__(self, config: ACPConfig, cwd: Path) -> None:
        self.id = new_run_id()
        self._config = config
        self._request: SubagentRequest | None = None
        self._cwd = cwd
        self._proc: ManagedProcess | None = None
        self._session: Session | None = None
        self._session_id: str | None = None
        self._stage: Stage = "initialize"
        self._output = BoundedText(config.max_output_bytes)
        self._usage = UsageTally()
        self._buffer = EventBuffer()
        self._events = self._buffer
        self._permissions = Permissions(config.permission, self._buffer.publish)
        self._result: SubagentResult | None = None
        self._start_error: SubagentStartError | None = None
        self._start_cause: BaseException | None = None
        self._teardown_line: str | None = None
        self._disposed = False
        self._dispose_text: str | None = None
        self._ready = anyio.Event()
        self._settled = anyio.Event()
        self._stop = anyio.Event()
        self._race_scope: anyio.CancelScope | None = None
        self._startup_deadline = math.inf
        """When the start expires (`anyio.current_time()` scale); armed at spawn or claim."""
        self._idle_expired = False
        self._watch: ExitWatch | None = None
        self.on_under_way: Callable[[], None] | None = None
        """Called once, at the run's first update or its settlement (a warm pool refills then)."""
        self._owner: OwnedTask | None = None
        self.warm_child_died = False
        """True when a pre-spawned child turned out dead before its session started (the
        provider then starts the run cold)."""
        graces = (
            config.dispose_eof_grace_seconds
            + config.dispose_grace_seconds
            + config.dispose_kill_grace_seconds
        )
        # The ladder may run twice (once by us, once more by the process block if the tree
        # was not confirmed gone), plus the bounded notify/close steps and the terminals.
        self._dispose_bound = 2 * graces + _CANCEL_NOTIFY_SECONDS + _CLOSE_SECONDS + 6.0

    # -- holder side ---------------------------------------------------------------------

    def serve(self, request: SubagentRequest) -> None:
        """Sets the request this run serves (once, before `open`)."""
        assert self._request is None
        self._request = request

    @property
    def request(self) -> SubagentRequest:
        request = self._request
        assert request is not None, "ACPRun.serve() comes before open()"
        return request

    async def open(self, owner: OwnedTask | None = None) -> None:
        """Starts the owner (or adopts a pre-spawned child's) and waits until the child is ready.

        Raises:
            SubagentStartError: the child could not start; its tree was torn down first.
        """
        self._owner = owner or OwnedTask.start(self._own, name="subagent_acp.run")
        try:
            await self._ready.wait()
        except BaseException:
            # Our caller was cancelled mid-start: roll back before letting the cancel through.
            with anyio.CancelScope(shield=True):
                self._request_stop()
                with anyio.move_on_after(self._dispose_bound):
                    await self._wait_owner()
            raise
        if self._start_error is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self._dispose_bound):
                await self._wait_owner()
            raise self._start_error from self._start_cause

    async def result(self) -> SubagentResult:
        if self._result is None:
            with self.request.cancel.cancel_scope():
                await self._settled.wait()
            if self._result is None:
                self._settle("aborted", None)  # the request's cancel signal fired first
        assert self._result is not None
        return self._result

    async def dispose(self) -> str | None:
        with anyio.CancelScope(shield=True):
            self._settle("aborted", None)
            self._request_stop()
            with anyio.move_on_after(self._dispose_bound):
                await self._wait_owner()
            if not self._disposed:
                self._disposed = True
                if self._owner_done():
                    self._dispose_text = self._teardown_line
                else:
                    _log.warning("ACP run %s: teardown did not finish in time", self.id)
                    outcome = None if self._proc is None else self._proc.outcome
                    self._dispose_text = teardown_line(self._config.provider_name, outcome)
            return self._dispose_text

    def _request_stop(self) -> None:
        """Asks the owner to end the run; a request in flight is abandoned at once."""
        self._stop.set()
        if self._race_scope is not None:
            self._race_scope.cancel()

    async def _wait_owner(self) -> None:
        if self._owner is not None:
            await self._owner.wait()

    def _owner_done(self) -> bool:
        return self._owner is None or self._owner.done

    # -- what the connection reports (the transport's reader task) ---------------------------

    def on_update(self, update: SessionUpdate) -> None:
        if self._result is not None:
            return
        event = (
            self._usage.note_update(update)
            if isinstance(update, UsageUpdate)
            else event_for(update)
        )
        if event is not None:
            self._buffer.publish(event)
        if isinstance(event, MessageChunk):
            self._output.add(event.text)
        self._note_under_way()

    # -- settlement ------------------------------------------------------------------------

    def _settle(self, stop_reason: StopReason, diagnostic: str | None) -> None:
        if self._result is None:
            self._permissions.stop_recording()
            self._result = SubagentResult(
                stop_reason=stop_reason,
                output=self._output.text,
                diagnostic=diagnostic,
                usage=self._usage.usage(),
            )
            self._buffer.close()
            self._settled.set()
            self._note_under_way()

    def _note_under_way(self) -> None:
        hook, self.on_under_way = self.on_under_way, None
        if hook is not None:
            hook()

    def _settle_facts(self, stop_reason: StopReason, failure: Failure | None) -> None:
        permissions = self._permissions
        diagnostic = result_diagnostic(
            self._config.provider_name,
            stop_reason,
            failure,
            permissions.line,
            permissions.refused,
        )
        self._settle(stop_reason, diagnostic)

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
        startup = None if failure is None else failure.line(self._config.provider_name)
        self._start_error = compose_start_error(
            "ACP", cancelled=cancelled, startup_line=startup, cleanup_line=cleanup_line
        )
        self._start_cause = cause
        self._ready.set()

    def abandon(self) -> None:
        """Fails a start whose pre-spawned child was lost before it could be driven."""
        self.warm_child_died = True
        self._fail_start(unexpected(self._stage), None, None)
        self._settle("aborted", None)

    # -- owner side ------------------------------------------------------------------------

    async def _own(self) -> None:
        """The cold path: spawn the child, then drive it."""
        config = self._config
        self._arm_startup()
        try:
            async with open_child(config, self._cwd) as proc, watching_exit(proc) as watch:
                await self.drive_owned(proc, open_session(proc, config), None, watch)
        except SpawnError as error:
            _log.info("ACP run %s: could not spawn the child (%s)", self.id, error.reason)
            # A workspace that vanished after it was checked is still a configuration fact.
            failure = (
                Failure("initialize", "configuration")
                if error.reason == "bad-cwd"
                else Failure("process", "process-start")
            )
            self._fail_start(failure, None, error)
        finally:
            if not self._ready.is_set():
                self._fail_start(unexpected(self._stage), None, None)
            self._settle("aborted", None)

    async def drive_owned(
        self,
        proc: ManagedProcess,
        session: Session,
        initialized: InitializeResponse | None,
        watch: ExitWatch,
    ) -> None:
        """Drives the child from its handshake (or after `initialize`, for a pre-spawned one)
        to the end of its teardown; the caller's blocks own the process and its exit watcher."""
        self._proc = proc
        self._session = session
        self._watch = watch
        watch.listener = self._on_exit
        self._arm_startup()
        try:
            await self._drive(proc, session, initialized)
        except Exception as error:
            # A bug of ours must neither hang nor crash the parent: settle with safe facts.
            _log.exception("ACP run %s: unexpected failure", self.id)
            failure = unexpected(self._stage)
            if not self._ready.is_set():
                self._fail_start(failure, None, error)
            else:
                self._settle_facts("error", failure)
        finally:
            if not self._ready.is_set():
                self._fail_start(unexpected(self._stage), None, None)
            self._settle("aborted", None)

    def _arm_startup(self) -> None:
        """Starts the startup bound (once: at the cold spawn, or when a warm child is claimed)."""
        seconds = self._config.startup_timeout_seconds
        if seconds is not None and self._startup_deadline == math.inf:
            self._startup_deadline = anyio.current_time() + seconds

    async def _drive(
        self, proc: ManagedProcess, session: Session, initialized: InitializeResponse | None
    ) -> None:
        config = self._config
        try:
            if config.terminal:
                failure, cause, cancelled = await self._converse_with_terminals(
                    session, initialized
                )
            else:
                failure, cause, cancelled = await self._converse(session, initialized, None)
            gone = await self._teardown(proc, session)
            cleanup = None if gone else teardown_line(config.provider_name, proc.outcome)
            if initialized is not None and failure is not None and not self._ready.is_set():
                self.warm_child_died = failure.category in ("process-exit", "transport")
            if not self._ready.is_set():
                self._fail_start(failure, cleanup, cause, cancelled=cancelled)
            else:
                self._teardown_line = cleanup
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_SECONDS):
                await session.close()

    async def _converse_with_terminals(
        self, session: Session, initialized: InitializeResponse | None
    ) -> tuple[Failure | None, BaseException | None, bool]:
        """`_converse` with the run's terminals, whose tasks live in a group of their own."""
        outcome: tuple[Failure | None, BaseException | None, bool] = (None, None, True)
        async with anyio.create_task_group() as services:
            terminals = Terminals(services, self._cwd)
            try:
                outcome = await self._converse(session, initialized, terminals)
            finally:
                # Terminals end first: their trees die with the run.
                terminals.close()
                services.cancel_scope.cancel()
        return outcome

    async def _converse(
        self,
        session: Session,
        initialized: InitializeResponse | None,
        terminals: Terminals | None,
    ) -> tuple[Failure | None, BaseException | None, bool]:
        """Handshake and prompt; returns once stopped, with the handshake's failure facts."""
        config = self._config
        session.client.bind(
            self._permissions,
            files=None if config.fs == "none" else WorkspaceFiles(self._cwd),
            writes=config.fs == "read-write",
            allow_writes=self.request.allow_writes,
            terminals=terminals,
        )
        session.transport.on_update = self.on_update
        failure, cause, cancelled = await self._handshake(session, initialized)
        if failure is None and not cancelled:
            idle = IdleDeadline(config.idle_timeout_seconds)
            session.transport.idle = idle
            session.client.idle = idle
            self._permissions.idle = idle
            self._ready.set()
            await self._prompt(session, idle)
            await self._stop.wait()
        return failure, cause, cancelled

    async def _handshake(
        self, session: Session, initialized: InitializeResponse | None
    ) -> tuple[Failure | None, BaseException | None, bool]:
        self._stage = "initialize"
        if initialized is None:
            capabilities = capabilities_for(self._config)
            raced_init = await self._race(lambda: session.initialize(capabilities))
            if raced_init.kind == "cancel":
                return None, None, True
            if raced_init.kind != "value" or raced_init.value is None:
                return self._failure("initialize", raced_init), raced_init.error, False
            initialized = raced_init.value
        self._stage = "new-session"
        mcp_servers = self._mcp_servers(initialized)
        if mcp_servers is None:
            return Failure("new-session", "configuration"), None, False
        raced = await self._race(lambda: session.new_session(str(self._cwd), mcp_servers))
        if raced.kind == "cancel":
            return None, None, True
        if raced.kind != "value" or raced.value is None:
            return self._failure("new-session", raced), raced.error, False
        response = raced.value
        session_id = response.session_id
        if session_id == "":
            _log.info("ACP run %s: the child returned no usable session id", self.id)
            return Failure("new-session", "protocol"), None, False
        self._session_id = session_id
        return await self._select_options(session, session_id, response)

    def _mcp_servers(self, initialized: InitializeResponse) -> list[MCPServer] | None:
        """The servers to pass in `session/new`, or `None` when the child cannot take them."""
        servers = mcp_servers_for(self.request.mcp_servers, initialized)
        if servers is None:
            _log.info("ACP run %s: the child does not take the request's MCP servers", self.id)
        return servers

    async def _select_options(
        self, session: Session, session_id: str, response: NewSessionResponse
    ) -> tuple[Failure | None, BaseException | None, bool]:
        """Applies `ACPConfig.mode` / `.model` when the child offers them."""
        for step in session_options(self._config, response):
            if step is None:
                _log.info("ACP run %s: the child does not offer the configured mode/model", self.id)
                return Failure("new-session", "configuration"), None, False
            raced = await self._race(partial(_apply_option, session, session_id, step))
            if raced.kind == "cancel":
                return None, None, True
            if raced.kind != "value":
                return self._failure("new-session", raced), raced.error, False
        return None, None, False

    async def _prompt(self, session: Session, idle: IdleDeadline) -> None:
        self._stage = "prompt"
        session_id = self._session_id
        assert session_id is not None
        raced: Raced[PromptAnswer] = Raced("cancel")
        async with anyio.create_task_group() as tg:
            if idle.seconds is not None:
                tg.start_soon(self._watch_idle, idle)
            raced = await self._race(lambda: session.prompt(session_id, self.request.prompt))
            tg.cancel_scope.cancel()
        if raced.kind == "cancel":
            self._settle("aborted", None)
            await self._notify_cancel(session, session_id)
            return
        if raced.kind == "timeout":
            _log.info("ACP run %s: the child was silent past idle_timeout_seconds", self.id)
            await self._notify_cancel(session, session_id)
            self._settle_facts("error", Failure("prompt", "timeout"))
            return
        if raced.kind == "value" and raced.value is not None:
            acp_stop_reason, usage = raced.value
            event = self._usage.note_answer(usage)
            if event is not None:
                self._buffer.publish(event)
            stop_reason, failure = map_stop_reason(acp_stop_reason)
            if stop_reason == "aborted" and self.request.cancel.cancelled:
                self._settle("aborted", None)  # we asked: a local cancel, not a remote abort
            else:
                self._settle_facts(stop_reason, failure)
            return
        self._settle_facts("error", self._failure("prompt", raced))

    async def _watch_idle(self, idle: IdleDeadline) -> None:
        """Ends the prompt's race once the child has been silent for the whole idle bound."""
        await idle.expired()
        self._idle_expired = True
        if self._race_scope is not None:
            self._race_scope.cancel()

    async def _notify_cancel(self, session: Session, session_id: str) -> None:
        """Best-effort `session/cancel`: the SDK sends nothing when a request is abandoned."""
        with anyio.move_on_after(_CANCEL_NOTIFY_SECONDS):
            try:
                await session.cancel(session_id)
            except Exception as error:
                _log.debug("ACP run %s: session/cancel was not delivered", self.id, exc_info=error)

    async def _teardown(self, proc: ManagedProcess, session: Session) -> bool:
        """The managed ladder; keeps stdout drained so a child blocked on it can exit."""
        config = self._config
        gone = False
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                if session.transport.broken is not None and proc.stdout is not None:
                    # Our reader stopped: keep the pipe drained so the child can exit.
                    tg.start_soon(discard_rest, proc.stdout)
                gone = await proc.terminate(
                    config.dispose_eof_grace_seconds,
                    config.dispose_grace_seconds,
                    config.dispose_kill_grace_seconds,
                )
                tg.cancel_scope.cancel()
        if not gone:
            _log.warning("ACP run %s: the process tree is not confirmed gone", self.id)
        return gone

    def _failure(self, stage: Stage, raced: Raced[T]) -> Failure:
        """Classifies a lost race by the classification rules in the package README."""
        proc = self._proc
        assert proc is not None
        session = self._session
        broken = session is not None and session.transport.broken is not None
        return lost_race_failure(stage, raced, proc.outcome, broken=broken, run_id=self.id)

    def _on_exit(self) -> None:
        """The leader exited: the request in flight gets `OUTCOME_WAIT_SECONDS` to finish.

        A reply written just before exiting is still delivered; EOF usually fails the request
        sooner, and a grandchild holding stdout cannot stretch the wait past the bound.
        """
        scope = self._race_scope
        if scope is not None:
            scope.deadline = min(scope.deadline, anyio.current_time() + OUTCOME_WAIT_SECONDS)

    async def _race(self, operation: Callable[[], Awaitable[T]]) -> Raced[T]:
        """Runs `operation` against process exit, the cancel signal and the stop request."""
        watch = self._watch
        assert watch is not None
        if self._stop.is_set():
            return Raced("cancel")
        raced: Raced[T] | None = None
        if self._idle_expired or self._startup_expired():
            return Raced("timeout")
        with self.request.cancel.cancel_scope(), anyio.CancelScope() as scope:
            if watch.exited:
                scope.deadline = anyio.current_time() + OUTCOME_WAIT_SECONDS
            if not self._ready.is_set():
                scope.deadline = min(scope.deadline, self._startup_deadline)
            self._race_scope = scope
            try:
                value = await operation()
            except Exception as error:
                if classify_error(error) == "connection-lost":
                    # Wait for the process outcome before the failure is classified.
                    with anyio.move_on_after(OUTCOME_WAIT_SECONDS):
                        await watch.seen.wait()
                raced = Raced("error", error=error)
            else:
                raced = Raced("value", value)
            finally:
                self._race_scope = None
        if raced is not None:
            return raced
        if self._stop.is_set() or self.request.cancel.cancelled:
            return Raced("cancel")
        if not watch.exited and (self._idle_expired or self._startup_expired()):
            return Raced("timeout")
        return Raced("exit")

    def _startup_expired(self) -> bool:
        return not self._ready.is_set() and anyio.current_time() >= self._startup_deadline


async def _apply_option(session: Session, session_id: str, step: Step) -> None:
    kind, config_id, value = step
    if kind == "mode":
        await session.set_mode(session_id, value)
    else:
        await session.set_config_option(session_id, config_id, value)
