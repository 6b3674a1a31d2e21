"""The Claude Code stream-json control protocol as the lifecycle's hooks: handshake, a turn.

The child's life — spawn, deadlines, settle-once, cancel, teardown — is the kit's
(`subagent_core.kit.ChildSession`); this module only speaks the CLI's protocol.

Handshake: `control_request{subtype: initialize}` → its `control_response` (a control request
the CLI sends meanwhile gets the fixed error). A turn is one `user` message; the turn reads the
CLI's frames itself until its `result` (or the first 401/403, which settles `authentication`
at once; the kit then interrupts the CLI's retries). The CLI answers every user message with
exactly one `result`, in order, so the child counts the results still owed: while an earlier,
interrupted turn's is outstanding, the frames read belong to that turn and its `result`
settles nothing (its usage is counted with the turn that reads it).

A session's turns are user messages on the same process. A resumed child starts with
`--resume <id>`, the `session_id` the CLI reported (kept in the session's record, never shown):
a CLI that no longer holds that conversation writes one `result` (`error_during_execution`,
`startup_failure_reason: resume_target_not_found` where it says why) and exits before it
answers `initialize`; that is the start error `resume-miss`, never a fresh conversation.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeGuard

import anyio
from subagent_core import StopReason, Usage, UsageEvent
from subagent_core.kit import (
    BoundedText,
    ChildCommand,
    ChildFailure,
    ChildLink,
    ChildPipes,
    ChildProtocol,
    Failure,
    StructuredOutputError,
    Turn,
    TurnDriver,
    add_usage,
    parse_structured_output,
    traceparent,
)

from ._argv import protocol_options
from ._config import ClaudeConfig
from ._facts import is_auth_signal, map_result
from ._permission import PermissionDesk
from ._transcript import CostMeter, Transcript
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

_LOST: Final[frozenset[Closed]] = frozenset({"eof", "read-error", "write-failed"})

_SESSION_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
"""A `session_id` worth keeping for `--resume` (a UUID in practice; never an option)."""


def resumable(session_id: object) -> TypeGuard[str]:
    """True for a session id `--resume` may take (a record holds it; a child reported it)."""
    return isinstance(session_id, str) and _SESSION_ID.fullmatch(session_id) is not None


_RESUME_MISSED: Final = "resume_target_not_found"
"""The `startup_failure_reason` of a resume whose conversation is gone (older CLIs give none)."""


class ClaudeChild(ChildProtocol):
    """One `claude` CLI process: its wire, and the `result` frames its turns still owe."""

    kind = "Claude"

    def __init__(
        self,
        config: ClaudeConfig,
        cwd: Path,
        command: str,
        output_schema: dict[str, Any] | None,
        *,
        config_dir: Path | None = None,
        resume: str | None = None,
        on_session: Callable[[str], None] | None = None,
        spent_usd: float = 0.0,
    ) -> None:
        self._config = config
        self._command = command
        self._cwd = cwd
        # `--json-schema` is a CLI option: the schema is the process's, fixed at spawn.
        self._output_schema = output_schema
        self._config_dir = config_dir
        """A resumable session's own `CLAUDE_CONFIG_DIR` (where its transcript is kept)."""
        self._resume = resume
        self._on_session = on_session
        self.session_id = resume
        """The CLI's own session id as last reported (child-controlled: kept, never shown)."""
        self.meter = CostMeter(spent_usd)
        self.stderr = config.child_stderr
        self.wire: Wire
        """The child's connection (set when the handshake begins)."""
        self.results_owed = 0
        """User messages sent whose `result` has not been read yet (interrupted turns')."""

    def command(self) -> ChildCommand:
        """The CLI's command; the trace context current at spawn (the run's span, or the
        session's: the process keeps it for all its turns) goes in its environment."""
        config = self._config
        options = protocol_options(config, self._output_schema, resume=self._resume)
        return config.child_command(
            self._command, self._cwd, options, self._config_dir, traceparent=traceparent()
        )

    def note_session(self, value: object) -> None:
        """Keeps the session id a frame reports, when it is one `--resume` can take."""
        if not resumable(value) or value == self.session_id:
            return
        self.session_id = value
        if self._on_session is not None:
            self._on_session(value)

    @property
    def config(self) -> ClaudeConfig:
        """The provider's configuration."""
        return self._config

    async def handshake(self, link: ChildLink) -> None:
        wire = self.wire = Wire(ChildPipes.of(link.proc, self._config))
        link.stage = "initialize"
        request_id = new_request_id()
        try:
            await wire.send(initialize_request(request_id))
            while not await self._initialized(wire, await wire.receive(), request_id):
                pass
        except WireClosedError as closed:
            failure = await self.closed_failure(link, closed.reason, "initialize")
            raise ChildFailure(failure) from None

    async def _initialized(self, wire: Wire, frame: Frame, request_id: str) -> bool:
        """True once `frame` answers `initialize` with success.

        Raises:
            ChildFailure: the CLI refused `initialize` (`protocol`), or a resumed CLI does
                not hold the conversation (`resume-miss`).
        """
        kind = frame.get("type")
        reason = frame.get("startup_failure_reason")
        if kind == "result" and self._resume is not None and reason in (None, _RESUME_MISSED):
            _log.info("Claude child: the CLI does not hold the session to resume")
            raise ChildFailure(Failure("initialize", "resume-miss"))
        if kind == "control_response":
            response = as_object(frame.get("response"))
            if response.get("request_id") != request_id:
                return False
            if response.get("subtype") == "success":
                return True
            _log.info("Claude child: the CLI refused initialize")
            raise ChildFailure(Failure("initialize", "protocol"))
        if kind == "control_request":
            await PermissionDesk.refuse(wire, frame)
        return False

    async def closed_failure(self, link: ChildLink, reason: Closed, stage: str) -> Failure:
        """Classifies a lost connection by the rules in the package README.

        An undecodable frame is usually a child that died mid-write, so it too waits for the
        outcome first; a child still alive after the wait wrote garbage (`protocol`).
        """
        if (reason in _LOST or reason == "undecodable") and await link.wait_exit():
            return link.exit_failure("process" if stage == self.turn_stage else stage)
        return Failure(stage, "protocol" if reason == "undecodable" else "transport")

    def begin_turn(self, link: ChildLink, turn: Turn) -> TurnDriver:
        return ClaudeTurn(self, link, turn)


class ClaudeTurn(TurnDriver):
    """One user message, its frames read inline until its `result`."""

    def __init__(self, child: ClaudeChild, link: ChildLink, turn: Turn) -> None:
        self._child = child
        self._link = link
        self._turn = turn
        self._max_output = child.config.max_output_bytes
        self._transcript = Transcript(turn.publish, self._max_output, self._running)
        self._usage: Usage | None = None
        self._streamed: Usage | None = None
        """The tokens the turn's model calls reported while streaming."""
        self._final: str | None = None
        self._sent = False

    @property
    def output(self) -> str:
        return self._final if self._final is not None else self._transcript.output.text

    @property
    def usage(self) -> Usage | None:
        if self.finished:
            return self._usage
        # Settled before its `result`: what it saw stream, so a budget's crossing is counted.
        return add_usage(self._child.meter.held, self._streamed)

    async def run(self) -> None:
        child, turn = self._child, self._turn
        wire = child.wire
        closed: Closed | None = None
        try:
            await wire.send(user_message(turn.prompt))
            # A cancelled write left nothing or a broken pipe behind: only a send that
            # returned puts a message on the wire, and so a `result` in the CLI's debt.
            self._sent = True
            child.results_owed += 1
            async with anyio.create_task_group() as tg:
                asks_host = callable(child.config.permission)
                desk = PermissionDesk(turn.gate, wire, tg, asks_host=asks_host)
                try:
                    while not turn.settled:
                        frame = await wire.receive()
                        self._link.touch()
                        await self._on_frame(frame, desk)
                except WireClosedError as error:
                    closed = error.reason
                tg.cancel_scope.cancel()
        except WireClosedError as error:
            closed = error.reason
        if closed is not None:
            raise ChildFailure(await child.closed_failure(self._link, closed, "prompt"))

    async def interrupt(self) -> None:
        """`control_request{subtype: interrupt}`, so the CLI stops working (and retrying).

        The kit calls it for a turn settled before its `result`: the usage that turn settled
        with took what was held, so nothing is held any more.
        """
        child = self._child
        child.meter.counted()
        wire = child.wire
        if not self._sent or wire.closed is not None:
            return
        try:
            await wire.send(interrupt_request(new_request_id()))
        except WireClosedError:
            _log.debug("Claude child: interrupt was not delivered")

    def _running(self, tokens: Usage) -> None:
        """The turn's running tokens (with what an interrupted turn left to count)."""
        self._streamed = tokens
        usage = self.usage
        if usage is not None:
            self._turn.publish(UsageEvent.of(usage))

    async def _on_frame(self, frame: Frame, desk: PermissionDesk) -> None:
        kind = frame.get("type")
        child = self._child
        if kind in ("system", "result"):
            child.note_session(frame.get("session_id"))
        if kind == "result":
            # Before any await: a cancel must not lose the count.
            child.results_owed = max(0, child.results_owed - 1)
            if child.results_owed == 0:
                self._on_result(frame)
            else:
                child.meter.hold(frame)
            return
        if child.results_owed > 1:
            # An earlier, interrupted turn is still ending: none of this is ours.
            if kind == "control_request":
                await PermissionDesk.refuse(child.wire, frame)
            return
        transcript = self._transcript
        if kind == "stream_event":
            transcript.on_stream_event(frame)
        elif kind == "assistant":
            transcript.on_assistant(frame)
            self._check_auth(frame.get("error"), frame.get("api_error_status"))
        elif kind == "user":
            transcript.on_user(frame)
        elif kind == "system":
            if frame.get("subtype") == "api_retry":
                self._check_auth(frame.get("error"), frame.get("error_status"))
        elif kind == "control_request":
            await desk.handle(frame)
        elif kind == "control_cancel_request":
            desk.cancel(frame.get("request_id"))

    def _check_auth(self, error: object, status: object) -> None:
        """The first 401/403 settles the turn: the CLI's retries would only delay it."""
        if is_auth_signal(error, status):
            self._turn.fail(Failure("prompt", "authentication"))

    def _on_result(self, frame: Frame) -> None:
        self.finished = True
        turn = self._turn
        self._usage = self._child.meter.settle(frame)
        if self._usage is not None:
            turn.publish(UsageEvent.of(self._usage))
        asked = turn.cancel.cancelled or turn.stop_requested
        stop_reason, failure = map_result(frame, self._transcript.last_error, interrupted=asked)
        if stop_reason == "completed":
            stop_reason, failure = self._completed_output(frame)
        if stop_reason == "aborted" and failure is None:
            turn.abort()
        else:
            turn.settle(stop_reason, failure)

    def _completed_output(self, frame: Frame) -> tuple[StopReason, Failure | None]:
        """The answer of a completed turn; with a schema, its validated structured output."""
        bounded = BoundedText(self._max_output)
        schema = self._turn.output_schema
        if schema is None:
            text = frame.get("result")
            if isinstance(text, str):
                bounded.add(text)
                self._final = bounded.text
            return "completed", None
        value: object = frame.get("structured_output")
        try:
            if value is None:
                raise StructuredOutputError("no structured output")
            text = json.dumps(value, ensure_ascii=False)
            self.structured_output = parse_structured_output(schema, text)
        except (StructuredOutputError, TypeError, ValueError):
            _log.info("Claude child: no structured output that validates")
            return "error", Failure("prompt", "output-schema")
        bounded.add(text)
        self._final = bounded.text
        return "completed", None
