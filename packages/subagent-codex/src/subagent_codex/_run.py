"""One Codex child run: spawn, handshake, one turn, settle, tear down.

A run's whole life is one owner task (`OwnedTask`): it owns the managed process, the wire's
reader, the approval worker and the exit and idle watchers from spawn to the end of the ladder,
so every resource has one owner even though `start`, `result` and `dispose` are called by the
holder from other tasks. Holder and owner talk only through events: readiness, settlement, a
stop request.

Handshake: `initialize` → `initialized` → `account/read` (a provider that needs OpenAI auth
with no account fails the start as `authentication`, instead of a turn that retries offline
for ever) → `thread/start` (ephemeral: nothing lands in the user's rollouts). Each request is
raced against the process exiting, the request's cancel signal, the stop request and the
startup deadline. After publication the turn runs; the owner then waits on one wake-up event
that every fact pokes (a settlement, the wire ending, the leader exiting, the idle deadline,
the stop request) and classifies what it sees.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Final, Literal, cast

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from subagent_core import (
    StopReason,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentStartError,
)
from subagent_core.kit import (
    EventBuffer,
    IdleDeadline,
    ManagedProcess,
    OwnedTask,
    PermissionGate,
    SpawnError,
    StructuredOutputError,
    compose_start_error,
    new_run_id,
    open_managed_process,
    parse_structured_output,
)

from ._approvals import QUEUE_CAPACITY, ServerRequest, serve_requests
from ._config import CodexConfig
from ._facts import (
    Failure,
    Stage,
    is_authentication,
    map_failed_turn,
    result_diagnostic,
    teardown_line,
)
from ._items import Transcript
from ._wire import Connection, ConnectionLostError, RequestId, RPCError

_log = logging.getLogger("subagent_codex")

OUTCOME_WAIT_SECONDS: Final = 1.0
"""How long a lost connection waits for the process outcome before it is classified."""

_INTERRUPT_SECONDS: Final = 1.0
"""Bound on the best-effort `turn/interrupt` (a child not reading stdin blocks the write)."""

CLIENT_NAME: Final = "subagent-codex"

# Notifications this client never reads: opting out keeps a chatty child's stdout small.
_OPT_OUT: Final = (
    "item/commandExecution/outputDelta",
    "item/fileChange/outputDelta",
    "command/exec/outputDelta",
    "process/outputDelta",
    "remoteControl/status/changed",
    "account/rateLimits/updated",
    "turn/diff/updated",
)

Called = Literal["value", "error", "lost", "exit", "cancel"]


class CodexRun(SubagentRun):
    """A published Codex child; `result()` never raises for child failure."""

    def __init__(self, config: CodexConfig, cwd: Path, request: SubagentRequest) -> None:
        self.id = new_run_id()
        self._config = config
        self._cwd = cwd
        self.request = request
        self._buffer = EventBuffer()
        self._events = self._buffer
        self._idle = idle = IdleDeadline(config.idle_timeout_seconds)
        self._gate = PermissionGate(config.permission, "Codex", self._buffer.publish, idle=idle)
        self._transcript = Transcript(config.max_output_bytes, self._buffer.publish)
        self._stage: Stage = "initialize"
        self._result: SubagentResult | None = None
        self._structured: object = None
        self._start_error: SubagentStartError | None = None
        self._start_cause: BaseException | None = None
        self._teardown_line: str | None = None
        self._disposed = False
        self._dispose_text: str | None = None
        self._ready = anyio.Event()
        self._settled = anyio.Event()
        self._stop = anyio.Event()
        self._wake = anyio.Event()
        self._exit_seen = anyio.Event()
        self._idle_expired = False
        self._call_scope: anyio.CancelScope | None = None
        self._proc: ManagedProcess | None = None
        self._conn: Connection | None = None
        self._thread_id: str | None = None
        self._turn_id: str | None = None
        self._turn_over = False
        self._we_interrupted = False
        self._last_error_info: object = None
        self._owner: OwnedTask | None = None
        graces = (
            config.dispose_eof_grace_seconds
            + config.dispose_grace_seconds
            + config.dispose_kill_grace_seconds
        )
        self._dispose_bound = 2 * graces + config.write_timeout_seconds + 6.0

    # -- holder side ---------------------------------------------------------------------

    async def open(self) -> None:
        """Starts the owner and waits until the child is ready (the thread exists).

        Raises:
            SubagentStartError: the child could not start; its tree was torn down first.
        """
        self._owner = OwnedTask.start(self._own, name="subagent_codex.run")
        try:
            await self._ready.wait()
        except BaseException:
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
                if self._owner is None or self._owner.done:
                    self._dispose_text = self._teardown_line
                else:
                    _log.warning("Codex run %s: teardown did not finish in time", self.id)
                    outcome = None if self._proc is None else self._proc.outcome
                    self._dispose_text = teardown_line(self._config.provider_name, outcome)
            return self._dispose_text

    def _request_stop(self) -> None:
        self._stop.set()
        if self._call_scope is not None:
            self._call_scope.cancel()
        self._poke()

    async def _wait_owner(self) -> None:
        if self._owner is not None:
            await self._owner.wait()

    def _poke(self) -> None:
        self._wake.set()

    # -- settlement ------------------------------------------------------------------------

    def _settle(self, stop_reason: StopReason, diagnostic: str | None) -> None:
        if self._result is None:
            self._gate.recording = False
            self._result = SubagentResult(
                stop_reason=stop_reason,
                output=self._transcript.output,
                diagnostic=diagnostic,
                usage=self._transcript.usage,
                structured_output=self._structured,
            )
            self._buffer.close()
            self._settled.set()
            self._poke()

    def _settle_facts(self, stop_reason: StopReason, failure: Failure | None) -> None:
        gate = self._gate
        self._settle(
            stop_reason,
            result_diagnostic(
                self._config.provider_name, stop_reason, failure, gate.line, gate.refused
            ),
        )

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
            "Codex", cancelled=cancelled, startup_line=startup, cleanup_line=cleanup_line
        )
        self._start_cause = cause
        self._ready.set()

    # -- what the wire reports (the reader task) ---------------------------------------------

    def _on_notification(self, method: str, params: Mapping[str, object]) -> None:
        if method == "error":
            error = params.get("error")
            if isinstance(error, dict):
                info = cast(Mapping[str, object], error).get("codexErrorInfo")
                self._last_error_info = info
                if self._ready.is_set() and is_authentication(info):
                    # Codex would retry a rejected key for seconds; the answer is known now.
                    self._settle_facts("error", Failure("prompt", "authentication"))
        elif method == "turn/completed":
            turn = params.get("turn")
            if isinstance(turn, dict):
                self._on_turn_completed(cast(Mapping[str, object], turn))
        elif self._result is None:
            self._transcript.on_notification(method, params)

    def _on_turn_completed(self, turn: Mapping[str, object]) -> None:
        ident = turn.get("id")
        if self._turn_id is not None and ident != self._turn_id:
            return  # another turn (a sub-agent's): not ours to settle on
        self._turn_over = True
        self._poke()
        if self._result is not None:
            return
        status = turn.get("status")
        if status == "completed":
            self._complete()
        elif status == "interrupted":
            if self._we_interrupted or self.request.cancel.cancelled:
                self._settle("aborted", None)
            else:
                self._settle_facts(
                    "aborted", Failure("prompt", "unknown", stop_reason="interrupted")
                )
        elif status == "failed":
            error = turn.get("error")
            info: object = self._last_error_info
            if isinstance(error, dict):
                info = cast(Mapping[str, object], error).get("codexErrorInfo", info)
            stop_reason, failure = map_failed_turn(info)
            self._settle_facts(stop_reason, failure)
        else:
            self._settle_facts("error", Failure("prompt", "unknown"))

    def _complete(self) -> None:
        schema = self.request.output_schema
        if schema is not None:
            try:
                self._structured = parse_structured_output(schema, self._transcript.output)
            except StructuredOutputError:
                _log.info("Codex run %s: the final answer does not fit the schema", self.id)
                self._settle_facts("error", Failure("prompt", "output-schema"))
                return
        self._settle_facts("completed", None)

    def _on_request(
        self,
        queue: MemoryObjectSendStream[ServerRequest],
        ident: RequestId,
        method: str,
        params: Mapping[str, object],
    ) -> bool:
        try:
            queue.send_nowait(ServerRequest(ident, method, params))
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False
        return True

    # -- owner side ------------------------------------------------------------------------

    async def _own(self) -> None:
        config = self._config
        try:
            async with open_managed_process(
                config.child_command(self._cwd),
                stdin="pipe",
                stdout="pipe",
                stderr="devnull",
                eof_grace_seconds=config.dispose_eof_grace_seconds,
                term_grace_seconds=config.dispose_grace_seconds,
                kill_grace_seconds=config.dispose_kill_grace_seconds,
            ) as proc:
                self._proc = proc
                await self._with_connection(proc)
        except SpawnError as error:
            _log.info("Codex run %s: could not spawn the child (%s)", self.id, error.reason)
            failure = (
                Failure("initialize", "configuration")
                if error.reason == "bad-cwd"
                else Failure("process", "process-start")
            )
            self._fail_start(failure, None, error)
        except Exception as error:
            _log.exception("Codex run %s: unexpected failure", self.id)
            self._fail_start(Failure(self._stage, "unknown"), None, error)
            self._settle_facts("error", Failure(self._stage, "unknown"))
        finally:
            if not self._ready.is_set():
                self._fail_start(Failure(self._stage, "unknown"), None, None)
            self._settle("aborted", None)

    async def _with_connection(self, proc: ManagedProcess) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        config = self._config
        send, receive = anyio.create_memory_object_stream[ServerRequest](QUEUE_CAPACITY)
        conn = Connection(
            proc.stdin,
            proc.stdout,
            max_frame_bytes=config.max_frame_bytes,
            write_timeout_seconds=config.write_timeout_seconds,
            on_notification=self._on_notification,
            on_request=partial(self._on_request, send),
            on_frame=self._idle.touch,
        )
        self._conn = conn
        failure: Failure | None = None
        cause: BaseException | None = None
        cancelled = False
        gone = False
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._read, conn)
            tg.start_soon(self._watch_exit, proc)
            tg.start_soon(serve_requests, conn, self._gate, receive)
            try:
                failure, cause, cancelled = await self._drive(conn, proc, tg)
            finally:
                send.close()
                gone = await self._teardown(proc)
                tg.cancel_scope.cancel()
        cleanup = None if gone else teardown_line(config.provider_name, proc.outcome)
        if not self._ready.is_set():
            self._fail_start(failure, cleanup, cause, cancelled=cancelled)
        else:
            self._teardown_line = cleanup

    async def _read(self, conn: Connection) -> None:
        await conn.read()
        self._poke()

    async def _watch_exit(self, proc: ManagedProcess) -> None:
        await proc.wait()
        self._exit_seen.set()
        scope = self._call_scope
        if scope is not None:
            # A reply written just before exiting is still delivered; no longer than this.
            scope.deadline = min(scope.deadline, anyio.current_time() + OUTCOME_WAIT_SECONDS)
        self._poke()

    async def _watch_idle(self) -> None:
        await self._idle.expired()
        self._idle_expired = True
        self._poke()

    async def _drive(
        self, conn: Connection, proc: ManagedProcess, tg: anyio.abc.TaskGroup
    ) -> tuple[Failure | None, BaseException | None, bool]:
        """Handshake (under the startup deadline), then the turn; returns the start facts."""
        startup = self._config.startup_timeout_seconds
        failure: Failure | None = Failure("initialize", "timeout")
        cause: BaseException | None = None
        cancelled = False
        with anyio.move_on_after(math.inf if startup is None else startup):
            failure, cause, cancelled = await self._handshake(conn)
        if failure is not None or cancelled:
            if failure is not None and failure.category == "timeout":
                _log.info("Codex run %s: the handshake outlived the startup deadline", self.id)
            return failure, cause, cancelled
        self._idle.touch()
        tg.start_soon(self._watch_idle)
        self._ready.set()
        await self._converse(conn, proc)
        await self._stop.wait()
        return None, None, False

    async def _handshake(
        self, conn: Connection
    ) -> tuple[Failure | None, BaseException | None, bool]:
        self._stage = "initialize"
        params: dict[str, object] = {
            "clientInfo": {"name": CLIENT_NAME, "title": None, "version": "0.1.0"},
            "capabilities": {"experimentalApi": False, "optOutNotificationMethods": _OPT_OUT},
        }
        steps: list[tuple[str, Mapping[str, object]]] = [
            ("initialize", params),
            ("account/read", {"refreshToken": False}),
            ("thread/start", self._thread_params()),
        ]
        for method, step_params in steps:
            called, value = await self._call(conn, method, step_params)
            if called == "cancel":
                return None, None, True
            if called != "value":
                return self._lost("initialize", called, value), _cause(value), False
            if method == "initialize":
                try:
                    await conn.notify("initialized")
                except ConnectionLostError as error:
                    return self._lost("initialize", "lost", error), error, False
            elif method == "account/read" and _needs_login(value):
                _log.info("Codex run %s: the model provider needs a login it lacks", self.id)
                return Failure("initialize", "authentication"), None, False
            elif method == "thread/start":
                self._thread_id = _thread_id(value)
                if self._thread_id is None:
                    return Failure("initialize", "protocol"), None, False
        return None, None, False

    def _thread_params(self) -> dict[str, object]:
        config = self._config
        # `reject` never asks (the sandbox alone decides); anything else asks on request.
        policy = "never" if config.permission == "reject" else "on-request"
        params: dict[str, object] = {
            "cwd": str(self._cwd),
            "approvalPolicy": policy,
            "sandbox": config.sandbox,
            "ephemeral": True,
        }
        if config.model is not None:
            params["model"] = config.model
        return params

    async def _converse(self, conn: Connection, proc: ManagedProcess) -> None:
        """Runs the turn until it settles, the wire ends, the deadline passes or we stop."""
        self._stage = "prompt"
        params: dict[str, object] = {
            "threadId": self._thread_id,
            "input": [{"type": "text", "text": self.request.prompt, "text_elements": []}],
        }
        if self.request.output_schema is not None:
            params["outputSchema"] = self.request.output_schema
        called, value = await self._call(conn, "turn/start", params)
        if called == "cancel":
            self._settle("aborted", None)
            return
        if called != "value":
            self._settle_facts("error", self._lost("prompt", called, value))
            return
        self._turn_id = _turn_id(value)
        while self._result is None and not self._stop.is_set():
            if conn.broken is not None or self._exit_seen.is_set():
                await self._settle_lost(conn, proc)
                break
            if self._idle_expired:
                _log.info("Codex run %s: no frame for the idle deadline", self.id)
                self._settle_facts("error", Failure("prompt", "timeout"))
                break
            with self.request.cancel.cancel_scope():
                await self._wake.wait()
            if self.request.cancel.cancelled:
                self._settle("aborted", None)
                break
            self._wake = anyio.Event()
        if not self._turn_over and conn.broken is None and not self._exit_seen.is_set():
            await self._interrupt(conn)

    async def _settle_lost(self, conn: Connection, proc: ManagedProcess) -> None:
        """The wire ended or the leader exited before `turn/completed`: classify it."""
        with anyio.move_on_after(OUTCOME_WAIT_SECONDS):
            # Whichever came first, give the other (and a last reply) a moment to arrive.
            if conn.broken is None:
                await conn.ended.wait()
            else:
                await self._exit_seen.wait()
        if self._result is None:
            self._settle_facts("error", self._lost("prompt", "lost", None))

    async def _interrupt(self, conn: Connection) -> None:
        """Best-effort `turn/interrupt`, so codex stops working (and retrying) at once."""
        if self._thread_id is None or self._turn_id is None:
            return
        self._we_interrupted = True
        params = {"threadId": self._thread_id, "turnId": self._turn_id}
        with anyio.move_on_after(_INTERRUPT_SECONDS, shield=True):
            try:
                await conn.request("turn/interrupt", params)
            except (RPCError, ConnectionLostError):
                _log.debug("Codex run %s: turn/interrupt was not delivered", self.id)

    async def _teardown(self, proc: ManagedProcess) -> bool:
        """The managed ladder while the reader keeps stdout drained, so codex can exit."""
        config = self._config
        gone = await proc.terminate(
            config.dispose_eof_grace_seconds,
            config.dispose_grace_seconds,
            config.dispose_kill_grace_seconds,
        )
        if not gone:
            _log.warning("Codex run %s: the process tree is not confirmed gone", self.id)
        return gone

    async def _call(
        self, conn: Connection, method: str, params: Mapping[str, object]
    ) -> tuple[Called, object]:
        """Sends one request, raced against exit, the cancel signal and the stop request."""
        if self._stop.is_set() or self.request.cancel.cancelled:
            return "cancel", None
        with self.request.cancel.cancel_scope(), anyio.CancelScope() as scope:
            if self._exit_seen.is_set():
                scope.deadline = anyio.current_time() + OUTCOME_WAIT_SECONDS
            self._call_scope = scope
            try:
                return "value", await conn.request(method, params)
            except RPCError as error:
                _log.info("Codex run %s: %s answered with an error", self.id, method)
                return "error", error
            except ConnectionLostError as error:
                with anyio.move_on_after(OUTCOME_WAIT_SECONDS):
                    await self._exit_seen.wait()
                return "lost", error
            finally:
                self._call_scope = None
        if self._stop.is_set() or self.request.cancel.cancelled:
            return "cancel", None
        return "exit", None

    def _lost(self, stage: Stage, called: Called, value: object) -> Failure:
        """Classifies a failed request or a lost wire by the safe-diagnostics rules."""
        proc = self._proc
        outcome = None if proc is None else proc.outcome
        exit_stage: Stage = "process" if stage == "prompt" else stage
        if called == "error":
            code = value.code if isinstance(value, RPCError) else None
            if code in (401, 403):
                return Failure(stage, "authentication")
            return Failure(stage, "protocol")
        conn = self._conn
        broken = None if conn is None else conn.broken
        if broken == "frame":
            return Failure(stage, "transport")
        if broken == "garbage":
            return Failure(stage, "protocol")
        if outcome is not None:
            return Failure(exit_stage, "process-exit", outcome=outcome)
        return Failure(stage, "transport")


def _cause(value: object) -> BaseException | None:
    return value if isinstance(value, BaseException) else None


def _needs_login(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    answer = cast(Mapping[str, object], value)
    return answer.get("requiresOpenaiAuth") is True and answer.get("account") is None


def _thread_id(value: object) -> str | None:
    if isinstance(value, dict):
        thread = cast(Mapping[str, object], value).get("thread")
        if isinstance(thread, dict):
            ident = cast(Mapping[str, object], thread).get("id")
            if isinstance(ident, str) and ident:
                return ident
    return None


def _turn_id(value: object) -> str | None:
    if isinstance(value, dict):
        turn = cast(Mapping[str, object], value).get("turn")
        if isinstance(turn, dict):
            ident = cast(Mapping[str, object], turn).get("id")
            if isinstance(ident, str) and ident:
                return ident
    return None
