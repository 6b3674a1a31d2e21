"""One Claude Code child run: spawn, control handshake, prompt, settle, tear down.

A run's whole life is one owner task: it owns the managed process and the wire from spawn to
the end of the ladder, so every resource has exactly one owner even though `start`, `result`
and `dispose` are called by the holder from other tasks. Holder and owner talk only through
events: readiness, settlement and a stop request.

Every wait of the owner is bounded by something it controls: the startup deadline during the
handshake, the idle deadline afterwards, the leader's exit (the read gets `OUTCOME_WAIT_SECONDS`
more, so a grandchild holding stdout cannot stretch it), the request's cancel signal and the
stop request. A local cancel settles `aborted` at once and sends `interrupt` without waiting
for the CLI's own `result`; only `dispose()` tears the tree down.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.abc
from subagent_core import (
    StopReason,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentStartError,
    Usage,
)
from subagent_core.kit import (
    BoundedText,
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

from ._argv import protocol_options
from ._config import ClaudeConfig
from ._facts import Failure, Mapped, Stage, is_auth_signal, map_result, result_diagnostic
from ._facts import teardown_line as _teardown_line
from ._permission import PermissionDesk
from ._stream import Transcript, result_usage
from ._wire import (
    Closed,
    Frame,
    Wire,
    WireClosedError,
    as_object,
    initialize_request,
    interrupt_request,
    new_request_id,
    user_message,
)

_log = logging.getLogger("subagent_claude")

OUTCOME_WAIT_SECONDS: Final = 1.0
"""How long a lost connection waits for the process outcome before it is classified."""

_INTERRUPT_SECONDS: Final = 1.0
"""Bound on the best-effort `interrupt` (a child not reading stdin blocks the write)."""

_LOST: Final[frozenset[Closed]] = frozenset({"eof", "read-error", "write-failed"})


class ClaudeRun(SubagentRun):
    """A published Claude child; `result()` never raises for child failure."""

    def __init__(
        self, config: ClaudeConfig, cwd: Path, command: str, request: SubagentRequest
    ) -> None:
        self.id = new_run_id()
        self._config = config
        self._cwd = cwd
        self._command = command
        self.request = request
        self._schema: Mapping[str, Any] | None = request.output_schema
        self._buffer = EventBuffer()
        self._events = self._buffer
        self._gate = PermissionGate(config.permission, "Claude", self._buffer.publish)
        self._transcript = Transcript(self._buffer.publish, config.max_output_bytes)
        self._stage: Stage = "initialize"
        self._usage: Usage | None = None
        self._final: str | None = None
        self._structured: object | None = None
        self._result: SubagentResult | None = None
        self._start_error: SubagentStartError | None = None
        self._start_cause: BaseException | None = None
        self._teardown_line: str | None = None
        self._disposed = False
        self._dispose_text: str | None = None
        self._ready = anyio.Event()
        self._settled = anyio.Event()
        self._stop = anyio.Event()
        self._exited = anyio.Event()
        self._interrupted = False
        self._scope: anyio.CancelScope | None = None
        self._read_scope: anyio.CancelScope | None = None
        self._proc: ManagedProcess | None = None
        self._wire: Wire | None = None
        self._owner: OwnedTask | None = None
        graces = (
            config.dispose_eof_grace_seconds
            + config.dispose_grace_seconds
            + config.dispose_kill_grace_seconds
        )
        # The ladder may run twice (ours, then the process block's if the tree was not
        # confirmed gone), plus the bounded interrupt.
        self._dispose_bound = 2 * graces + _INTERRUPT_SECONDS + 4.0

    # -- holder side ---------------------------------------------------------------------

    async def open(self) -> None:
        """Starts the owner and waits until the child is ready (its handshake answered).

        Raises:
            SubagentStartError: the child could not start; its tree was torn down first.
        """
        self._owner = OwnedTask.start(self._own, name="subagent_claude.run")
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
                    _log.warning("Claude run %s: teardown did not finish in time", self.id)
                    outcome = None if self._proc is None else self._proc.outcome
                    self._dispose_text = _teardown_line(self._config.provider_name, outcome)
            return self._dispose_text

    def _request_stop(self) -> None:
        self._stop.set()
        if self._scope is not None:
            self._scope.cancel()

    async def _wait_owner(self) -> None:
        if self._owner is not None:
            await self._owner.wait()

    # -- settlement ------------------------------------------------------------------------

    def _settle(self, stop_reason: StopReason, diagnostic: str | None) -> None:
        if self._result is None:
            self._gate.recording = False
            output = self._final if self._final is not None else self._transcript.output.text
            structured = self._structured if stop_reason == "completed" else None
            self._result = SubagentResult(
                stop_reason=stop_reason,
                output=output,
                diagnostic=diagnostic,
                usage=self._usage,
                structured_output=structured,
            )
            self._buffer.close()
            self._settled.set()

    def _settle_mapped(self, mapped: Mapped) -> None:
        if mapped.stop_reason == "aborted" and not mapped.remote_abort:
            self._settle("aborted", None)
            return
        gate = self._gate
        provider = self._config.provider_name
        self._settle(
            mapped.stop_reason, result_diagnostic(provider, mapped, gate.line, gate.refused)
        )

    def _fail(self, failure: Failure) -> None:
        self._settle_mapped(Mapped("error", failure))

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
            "Claude", cancelled=cancelled, startup_line=startup, cleanup_line=cleanup_line
        )
        self._start_cause = cause
        self._ready.set()

    # -- owner side ------------------------------------------------------------------------

    async def _own(self) -> None:
        config = self._config
        command = config.child_command(
            self._command, self._cwd, protocol_options(config, self._schema)
        )
        try:
            async with open_managed_process(
                command,
                stdin="pipe",
                stdout="pipe",
                stderr="inherit",
                eof_grace_seconds=config.dispose_eof_grace_seconds,
                term_grace_seconds=config.dispose_grace_seconds,
                kill_grace_seconds=config.dispose_kill_grace_seconds,
            ) as proc:
                self._proc = proc
                await self._drive(proc)
        except SpawnError as error:
            _log.info("Claude run %s: could not spawn the CLI (%s)", self.id, error.reason)
            failure = (
                Failure("initialize", "configuration")
                if error.reason == "bad-cwd"
                else Failure("process", "process-start")
            )
            self._fail_start(failure, None, error)
        except Exception as error:
            # A bug of ours must neither hang nor crash the parent: settle with safe facts.
            _log.exception("Claude run %s: unexpected failure", self.id)
            if not self._ready.is_set():
                self._fail_start(Failure(self._stage, "unknown"), None, error)
            else:
                self._fail(Failure(self._stage, "unknown"))
        finally:
            if not self._ready.is_set():
                self._fail_start(Failure(self._stage, "unknown"), None, None)
            self._settle("aborted", None)

    async def _drive(self, proc: ManagedProcess) -> None:
        config = self._config
        assert proc.stdout is not None
        assert proc.stdin is not None
        wire = Wire(
            proc.stdout,
            proc.stdin,
            max_frame_bytes=config.max_frame_bytes,
            write_timeout_seconds=config.write_timeout_seconds,
        )
        self._wire = wire
        failure: Failure | None = None
        cancelled = False
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch_exit, proc)
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._stop.is_set():
                    scope.cancel()
                failure, cancelled = await self._handshake(wire)
                if failure is None and not cancelled:
                    self._ready.set()
                    await self._converse(wire)
                    await self._stop.wait()
            self._scope = None
            if not self._ready.is_set() and failure is None:
                cancelled = True  # stopped while the handshake ran
            tg.cancel_scope.cancel()
        gone = await self._teardown(proc)
        cleanup = None if gone else _teardown_line(config.provider_name, proc.outcome)
        if not self._ready.is_set():
            self._fail_start(failure, cleanup, None, cancelled=cancelled)
        else:
            self._teardown_line = cleanup

    async def _watch_exit(self, proc: ManagedProcess) -> None:
        await proc.wait()
        self._exited.set()
        scope = self._read_scope
        if scope is not None:
            scope.deadline = min(scope.deadline, anyio.current_time() + OUTCOME_WAIT_SECONDS)

    def _exit_failure(self, stage: Stage) -> Failure:
        proc = self._proc
        assert proc is not None
        exit_stage: Stage = "process" if stage == "prompt" else stage
        return Failure(exit_stage, "process-exit", outcome=proc.outcome)

    async def _closed_failure(self, reason: Closed, stage: Stage) -> Failure:
        """Classifies a lost connection by the rules in the package README.

        An undecodable frame is usually a child that died mid-write, so it too waits for the
        outcome first; a child still alive after the wait wrote garbage (`protocol`).
        """
        if reason in _LOST or reason == "undecodable":
            with anyio.move_on_after(OUTCOME_WAIT_SECONDS):
                await self._exited.wait()
            if self._exited.is_set():
                return self._exit_failure(stage)
        return Failure(stage, "protocol" if reason == "undecodable" else "transport")

    async def _handshake(self, wire: Wire) -> tuple[Failure | None, bool]:
        """Sends `initialize` and waits for its answer; `(failure, cancelled)`."""
        self._stage = "initialize"
        request_id = new_request_id()
        timeout = self._config.startup_timeout_seconds
        deadline = math.inf if timeout is None else anyio.current_time() + timeout
        failure: Failure | None = None
        answered = False
        with (
            anyio.CancelScope(deadline=deadline) as timer,
            self.request.cancel.cancel_scope(),
            anyio.CancelScope() as read_scope,
        ):
            self._read_scope = read_scope
            if self._exited.is_set():
                read_scope.deadline = anyio.current_time() + OUTCOME_WAIT_SECONDS
            try:
                await wire.send(initialize_request(request_id))
                while not answered:
                    frame = await wire.receive()
                    answered, failure = await self._handshake_frame(wire, frame, request_id)
            except WireClosedError as closed:
                failure = await self._closed_failure(closed.reason, "initialize")
            finally:
                self._read_scope = None
        if self.request.cancel.cancelled or self._stop.is_set():
            return None, True
        if answered or failure is not None:
            return failure, False
        if timer.cancelled_caught and not self._exited.is_set():
            return Failure("initialize", "timeout"), False
        return self._exit_failure("initialize"), False

    async def _handshake_frame(
        self, wire: Wire, frame: Frame, request_id: str
    ) -> tuple[bool, Failure | None]:
        kind = frame.get("type")
        if kind == "control_response":
            response = as_object(frame.get("response"))
            if response.get("request_id") != request_id:
                return False, None
            if response.get("subtype") == "success":
                return True, None
            _log.info("Claude run %s: the CLI refused initialize", self.id)
            return True, Failure("initialize", "protocol")
        if kind == "control_request":
            await PermissionDesk.refuse(wire, frame)
        return False, None

    async def _converse(self, wire: Wire) -> None:
        """Sends the prompt and reads until the run settles (or is stopped)."""
        self._stage = "prompt"
        idle = IdleDeadline(self._config.idle_timeout_seconds)
        self._gate.idle = idle  # a host callback's wait is the parent's silence, not the CLI's
        async with anyio.create_task_group() as tg:
            desk = PermissionDesk(self._gate, wire, tg, asks_host=callable(self._config.permission))
            tg.start_soon(self._watch_cancel, wire)
            tg.start_soon(self._watch_idle, wire, idle)
            with anyio.CancelScope() as read_scope:
                self._read_scope = read_scope
                if self._exited.is_set():
                    read_scope.deadline = anyio.current_time() + OUTCOME_WAIT_SECONDS
                try:
                    await wire.send(user_message(self.request.prompt))
                    while self._result is None:
                        frame = await wire.receive()
                        idle.touch()
                        await self._on_frame(frame, wire, desk)
                except WireClosedError as closed:
                    if self._result is None:
                        self._fail(await self._closed_failure(closed.reason, "prompt"))
                finally:
                    self._read_scope = None
            if self._result is None and read_scope.cancelled_caught and self._exited.is_set():
                self._fail(self._exit_failure("prompt"))
            tg.cancel_scope.cancel()

    async def _watch_cancel(self, wire: Wire) -> None:
        """A local cancel: settle `aborted` now, then ask the CLI to stop the turn."""
        await self.request.cancel.wait()
        if self._result is None:
            self._settle("aborted", None)
            await self._interrupt(wire)

    async def _watch_idle(self, wire: Wire, idle: IdleDeadline) -> None:
        await idle.expired()
        if self._result is None:
            _log.info("Claude run %s: no frame within idle_timeout_seconds", self.id)
            self._fail(Failure("prompt", "timeout"))
            await self._interrupt(wire)

    async def _interrupt(self, wire: Wire) -> None:
        self._interrupted = True
        with anyio.move_on_after(_INTERRUPT_SECONDS):
            try:
                await wire.send(interrupt_request(new_request_id()))
            except WireClosedError:
                _log.debug("Claude run %s: interrupt was not delivered", self.id)

    async def _on_frame(self, frame: Frame, wire: Wire, desk: PermissionDesk) -> None:
        kind = frame.get("type")
        transcript = self._transcript
        if kind == "stream_event":
            transcript.on_stream_event(frame)
        elif kind == "assistant":
            transcript.on_assistant(frame)
            if is_auth_signal(frame.get("error"), frame.get("api_error_status")):
                await self._authentication_failed(wire)
        elif kind == "user":
            transcript.on_user(frame)
        elif kind == "system":
            if frame.get("subtype") == "api_retry" and is_auth_signal(
                frame.get("error"), frame.get("error_status")
            ):
                await self._authentication_failed(wire)
        elif kind == "control_request":
            await desk.handle(frame)
        elif kind == "control_cancel_request":
            desk.cancel(frame.get("request_id"))
        elif kind == "result":
            self._on_result(frame)

    async def _authentication_failed(self, wire: Wire) -> None:
        """The first 401/403 settles the run: the CLI's retries would only delay it."""
        self._fail(Failure("prompt", "authentication"))
        await self._interrupt(wire)

    def _on_result(self, frame: Frame) -> None:
        usage, event = result_usage(frame)
        if usage is not None:
            self._usage = usage
        if event is not None:
            self._buffer.publish(event)
        mapped = map_result(frame, self._transcript.last_error, interrupted=self._interrupted)
        if mapped.stop_reason == "completed":
            mapped = self._completed_output(frame, mapped)
        self._settle_mapped(mapped)

    def _completed_output(self, frame: Frame, mapped: Mapped) -> Mapped:
        """The answer of a completed run; with a schema, its validated structured output."""
        bounded = BoundedText(self._config.max_output_bytes)
        schema = self._schema
        if schema is None:
            text = frame.get("result")
            if isinstance(text, str):
                bounded.add(text)
                self._final = bounded.text
            return mapped
        value: object = frame.get("structured_output")
        try:
            if value is None:
                raise StructuredOutputError("no structured output")
            text = json.dumps(value, ensure_ascii=False)
            self._structured = parse_structured_output(schema, text)
        except (StructuredOutputError, TypeError, ValueError):
            _log.info("Claude run %s: no structured output that validates", self.id)
            return Mapped("error", Failure("prompt", "output-schema"))
        bounded.add(text)
        self._final = bounded.text
        return mapped

    async def _teardown(self, proc: ManagedProcess) -> bool:
        """The managed ladder; keeps stdout drained so a child blocked on it can exit."""
        config = self._config
        gone = False
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                if proc.stdout is not None:
                    tg.start_soon(_discard, proc.stdout)
                gone = await proc.terminate(
                    config.dispose_eof_grace_seconds,
                    config.dispose_grace_seconds,
                    config.dispose_kill_grace_seconds,
                )
                tg.cancel_scope.cancel()
        if not gone:
            _log.warning("Claude run %s: the process tree is not confirmed gone", self.id)
        return gone


async def _discard(stream: anyio.abc.ByteReceiveStream) -> None:
    """Reads and drops whatever the child still writes."""
    try:
        while True:
            await stream.receive(65536)
    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        return
