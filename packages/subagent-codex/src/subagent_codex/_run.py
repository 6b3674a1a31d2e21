"""The Codex protocol as the lifecycle's hooks: handshake, a turn, its interrupt.

The child's life — spawn, deadlines, settle-once, cancel, teardown — is the kit's
(`subagent_core.kit.ChildSession`); this module only speaks the app-server protocol.

Handshake: `initialize` → `initialized` → `account/read` (a provider that needs OpenAI auth
with no account fails the start as `authentication`, instead of a turn that retries offline
for ever) → `thread/start`, or `thread/resume` for a session's fresh child (a thread it no
longer holds is a `resume-miss`); what these send and how their answers are read is
`_thread`'s. A turn is `turn/start` on that thread; the reader hands its notifications to the
turn's transcript and settles it on `turn/completed` of its own turn id. An interrupted turn's
id is remembered, so its late `turn/completed` never settles the next turn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import cast

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from subagent_core import SubagentEvent, Usage, UsageEvent
from subagent_core.kit import (
    ChildCommand,
    ChildFailure,
    ChildLink,
    ChildPipes,
    ChildProtocol,
    Failure,
    PermissionGate,
    StructuredOutputError,
    Turn,
    TurnDriver,
    parse_structured_output,
    traceparent,
)

from ._config import CodexConfig
from ._facts import is_authentication, map_failed_turn
from ._permission import QUEUE_CAPACITY, ServerRequest, queue_request, serve_requests
from ._thread import answer_id, initialize_params, needs_login, resume_params, start_params
from ._transcript import Transcript, thread_totals, usage_since
from ._wire import Connection, ConnectionLostError, RPCError

_log = logging.getLogger("subagent_codex")


class CodexChild(ChildProtocol):
    """One `codex app-server` child: its connection, its thread, the turn it is running."""

    kind = "Codex"

    def __init__(
        self,
        config: CodexConfig,
        cwd: Path,
        *,
        home: Path | None = None,
        resume_thread: str | None = None,
        resumed_totals: Usage | None = None,
        on_thread: Callable[[str], None] | None = None,
    ) -> None:
        self._config = config
        self._cwd = cwd
        self._home = home
        """A resumable session's own `CODEX_HOME` (its thread is then not ephemeral)."""
        self._resume_thread = resume_thread
        self._on_thread = on_thread
        self.totals: Usage | None = resumed_totals
        """The thread's running token totals as last reported (each turn counts its part). A
        resumed thread's totals go on from its earlier turns' (codex restores them)."""
        self.stderr = config.child_stderr
        self.connection: Connection
        """The child's connection (set when the handshake begins)."""
        self.thread_id: str
        """The thread every turn runs on (set once the handshake started or resumed it)."""
        self._link: ChildLink | None = None
        self._driver: CodexTurn | None = None
        self._reading = False
        self.stale_turns: set[str] = set()
        """Ids of turns we interrupted: their late `turn/completed` settles nothing."""

    def command(self) -> ChildCommand:
        return self._config.child_command(self._cwd, self._home)

    def reading(self) -> bool:
        return self._reading

    @property
    def max_output_bytes(self) -> int:
        """The most output text a turn keeps."""
        return self._config.max_output_bytes

    # -- the handshake ---------------------------------------------------------------------------

    async def handshake(self, link: ChildLink) -> None:
        config = self._config
        send, receive = anyio.create_memory_object_stream[ServerRequest](QUEUE_CAPACITY)
        conn = Connection(
            ChildPipes.of(link.proc, config),
            on_notification=self._on_notification,
            on_request=partial(queue_request, send),
            on_frame=link.touch,
        )
        self.connection = conn
        self._link = link
        self._reading = True
        link.start_soon(self._read, conn, send)
        link.start_soon(serve_requests, conn, self._gate, receive)
        await self.call(link, "initialize", initialize_params())
        try:
            await conn.notify("initialized")
        except ConnectionLostError as error:
            raise ChildFailure(await self.failure(link, "initialize", error)) from error
        account = await self.call(link, "account/read", {"refreshToken": False})
        if needs_login(account):
            _log.info("Codex child: the model provider needs a login it lacks")
            raise ChildFailure(Failure("initialize", "authentication"))
        if self._resume_thread is None:
            params = start_params(config, self._cwd, kept=self._home is not None)
            answer = await self.call(link, "thread/start", params, traceparent=traceparent())
        else:
            answer = await self._resume(link, self._resume_thread)
        thread_id = answer_id(answer, "thread")
        if thread_id is None:
            raise ChildFailure(Failure("initialize", "protocol"))
        self.thread_id = thread_id
        if self._on_thread is not None:
            self._on_thread(thread_id)

    async def _resume(self, link: ChildLink, thread: str) -> object:
        """`thread/resume`: a thread the child's home no longer holds is a `resume-miss`."""
        params = resume_params(self._config, self._cwd, thread)
        try:
            return await self.connection.request("thread/resume", params)
        except RPCError as error:
            # Codex answers -32600 ("no rollout found") for a thread it does not hold.
            _log.info("Codex child: thread/resume was refused")
            raise ChildFailure(Failure("initialize", "resume-miss")) from error
        except ConnectionLostError as error:
            raise ChildFailure(await self.failure(link, "initialize", error)) from error

    # -- what the wire reports (the reader task) -------------------------------------------------

    async def _read(
        self, conn: Connection, requests: MemoryObjectSendStream[ServerRequest]
    ) -> None:
        try:
            await conn.read()
        finally:
            self._reading = False
            requests.close()
            if self._driver is not None:
                self._driver.wake()

    def _gate(self) -> PermissionGate | None:
        link = self._link
        turn = None if link is None else link.turn
        return None if turn is None or turn.settled else turn.gate

    def _on_notification(self, method: str, params: Mapping[str, object]) -> None:
        driver = self._driver
        if driver is not None:
            driver.on_notification(method, params)
        elif method == "thread/tokenUsage/updated":
            # Totals reported before any turn (a resumed thread's): the first turn counts from them.
            self.totals = thread_totals(params) or self.totals

    # -- requests ----------------------------------------------------------------------------------

    async def call(
        self,
        link: ChildLink,
        method: str,
        params: Mapping[str, object],
        *,
        traceparent: str | None = None,
    ) -> object:
        """One request; a refused or lost one raises its classified failure.

        Raises:
            ChildFailure: the child answered with an error or the connection was lost.
        """
        stage = link.stage if self._driver is None else self.turn_stage
        try:
            return await self.connection.request(method, params, traceparent=traceparent)
        except RPCError as error:
            _log.info("Codex child: %s answered with an error", method)
            raise ChildFailure(await self.failure(link, stage, error)) from error
        except ConnectionLostError as error:
            raise ChildFailure(await self.failure(link, stage, error)) from error

    async def failure(self, link: ChildLink, stage: str, error: BaseException | None) -> Failure:
        """Classifies a refused request or a lost wire by the safe-diagnostics rules."""
        if isinstance(error, RPCError):
            if error.code in (401, 403):
                return Failure(stage, "authentication")
            return Failure(stage, "protocol")
        await link.wait_exit()  # the process outcome, if it is coming, decides
        broken = self.connection.broken
        if broken == "frame":
            return Failure(stage, "transport")
        if broken == "garbage":
            return Failure(stage, "protocol")
        if link.exited:
            return link.exit_failure("process" if stage == self.turn_stage else stage)
        return Failure(stage, "transport")

    # -- turns -------------------------------------------------------------------------------------

    def begin_turn(self, link: ChildLink, turn: Turn) -> TurnDriver:
        driver = CodexTurn(self, link, turn)
        self._driver = driver
        return driver


class CodexTurn(TurnDriver):
    """One `turn/start` on the child's thread, followed to its `turn/completed`."""

    def __init__(self, child: CodexChild, link: ChildLink, turn: Turn) -> None:
        self._child = child
        self._link = link
        self._turn = turn
        self._transcript = Transcript(child.max_output_bytes, self._publish)
        self._baseline = child.totals
        """The thread's totals when this turn began: the turn's usage is what it added."""
        self._turn_id: str | None = None
        self._last_error_info: object = None
        self._wake = anyio.Event()

    @property
    def output(self) -> str:
        return self._transcript.output

    @property
    def usage(self) -> Usage | None:
        return usage_since(self._transcript.usage, self._baseline)

    def _publish(self, event: SubagentEvent) -> None:
        """The transcript's events; a usage report counts this turn's part of the totals."""
        if isinstance(event, UsageEvent):
            self._child.totals = self._transcript.usage
            usage = self.usage
            if usage is not None:
                event = UsageEvent.of(usage)
        self._turn.publish(event)

    def wake(self) -> None:
        """Wakes `run()` to look again (the turn settled, or the wire ended)."""
        self._wake.set()

    async def run(self) -> None:
        child, turn = self._child, self._turn
        params: dict[str, object] = {
            "threadId": child.thread_id,
            "input": [{"type": "text", "text": turn.prompt, "text_elements": []}],
        }
        if turn.output_schema is not None:
            params["outputSchema"] = turn.output_schema
        answer = await child.call(self._link, "turn/start", params, traceparent=turn.traceparent)
        self._turn_id = answer_id(answer, "turn")
        conn = child.connection
        while not turn.settled:
            if conn.broken is not None:
                raise ChildFailure(await child.failure(self._link, child.turn_stage, None))
            await self._wake.wait()
            self._wake = anyio.Event()

    async def interrupt(self) -> None:
        """`turn/interrupt`, so codex stops working (and retrying) at once."""
        if self._turn_id is None or self._child.connection.broken is not None:
            return
        self._child.stale_turns.add(self._turn_id)
        params = {"threadId": self._child.thread_id, "turnId": self._turn_id}
        try:
            await self._child.connection.request("turn/interrupt", params)
        except (RPCError, ConnectionLostError):
            _log.debug("Codex child: turn/interrupt was not delivered")

    # -- what the reader hands over --------------------------------------------------------------

    def on_notification(self, method: str, params: Mapping[str, object]) -> None:
        turn = self._turn
        if method == "error":
            error = params.get("error")
            if isinstance(error, dict):
                info = cast(Mapping[str, object], error).get("codexErrorInfo")
                self._last_error_info = info
                if is_authentication(info) and not turn.settled:
                    # Codex would retry a rejected key for seconds; the answer is known now.
                    turn.fail(Failure("prompt", "authentication"))
                    self.wake()
        elif method == "turn/completed":
            completed = params.get("turn")
            if isinstance(completed, dict):
                self._on_turn_completed(cast(Mapping[str, object], completed))
        elif not turn.settled:
            self._transcript.on_notification(method, params)

    def _on_turn_completed(self, completed: Mapping[str, object]) -> None:
        ident = completed.get("id")
        if isinstance(ident, str) and ident in self._child.stale_turns:
            return  # an interrupted earlier turn's end
        if self._turn_id is not None and ident != self._turn_id:
            return  # another turn (a sub-agent's): not ours to settle on
        self.finished = True
        self.wake()
        turn = self._turn
        if turn.settled:
            return
        status = completed.get("status")
        if status == "completed":
            self._complete()
        elif status == "interrupted":
            if turn.cancel.cancelled or turn.stop_requested:
                turn.abort()
            else:
                turn.settle("aborted", Failure("prompt", "unknown", stop_reason="interrupted"))
        elif status == "failed":
            error = completed.get("error")
            info: object = self._last_error_info
            if isinstance(error, dict):
                info = cast(Mapping[str, object], error).get("codexErrorInfo", info)
            stop_reason, failure = map_failed_turn(info)
            turn.settle(stop_reason, failure)
        else:
            turn.fail(Failure("prompt", "unknown"))

    def _complete(self) -> None:
        schema = self._turn.output_schema
        if schema is not None:
            try:
                self.structured_output = parse_structured_output(schema, self.output)
            except StructuredOutputError:
                _log.info("Codex child: the final answer does not fit the schema")
                self._turn.fail(Failure("prompt", "output-schema"))
                return
        self._turn.complete()
