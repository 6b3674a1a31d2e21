"""`harness sdk-runtime`: the direct-model agent over the DeepSeek Harness SDK stdio protocol.

Built on `subagent_sdk.wire` (framing, method names, params, results, notifications and the
runtime's error texts), as the fake runtime is. `initialize`, `session/prompt` (answered at
once with a `messageId` receipt; prompts to one session queue) and `shutdown`. Every
session-log append is a `session.event` whose `seq` counts per session; `session.status`
brackets each busy period; in-process children (subagent_delegate) are announced with
`subagent.started` / `subagent.finished`. `shutdown`, stdin EOF and SIGTERM cancel running
turns, wait (bounded) for their cleanup and exit 0; nothing is sent after shutdown began.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
import anyio.abc
from model_agent import (
    AgentEvent,
    AgentStatus,
    ChildEnded,
    ChildEvent,
    ChildStarted,
    ReasoningDelta,
    Retrying,
    TextDelta,
    ToolEnded,
    ToolStarted,
)
from subagent_core import CancelSignal
from subagent_core.kit import open_stdio_streams
from subagent_sdk import wire

from harness._config.endpoint import ResolvedEndpoint, resolve_endpoint
from harness._config.loading import load_config
from harness._config.settings import WorkMode
from harness._version import VERSION

from .conversation import Conversation
from .conversation_store import SessionStore, StoredSession, now_iso
from .host_logging import prepare_server
from .stdin_lines import stdin_lines

_log = logging.getLogger("harness.sdk_runtime")

SHUTDOWN_GRACE_SECONDS = 15.0
"""How long shutdown waits for cancelled turns to clean up their commands and children."""

_TURN_END_KINDS: dict[AgentStatus, wire.TurnEndKind] = {
    "completed": "completed",
    "max-tokens": "max-tokens",
    "refusal": "blocked",
    "cancelled": "aborted",
}
_STEP_LIMIT_ERROR = ("the step limit was reached", "step-limit")
_TURN_FAILED_ERROR = ("the model turn failed", "turn-failed")


def turn_end_reason(status: AgentStatus | None) -> wire.JSONObject:
    """The closed `turn/end` reason for an agent status (None: the turn crashed).

    A cancel only happens when this runtime is disposed; error texts are ours, never the model's.
    """
    kind = _TURN_END_KINDS.get(status) if status is not None else None
    if kind is not None:
        return wire.turn_end_reason(kind, abort_cause="disposed")
    message, code = _STEP_LIMIT_ERROR if status == "step-limit" else _TURN_FAILED_ERROR
    return wire.turn_end_reason("error", error_message=message, error_code=code)


_CHILD_STATUSES: dict[str, AgentStatus] = {
    "completed": "completed",
    "cancelled": "cancelled",
    "failed": "failed",
}


def _child_stop_reason(status: str) -> str:
    return {"completed": "completed", "cancelled": "aborted"}.get(status, "error")


@dataclass(slots=True)
class _Session:
    id: str
    conversation: Conversation | None = None
    """Loaded (or created) when a busy period starts; dropped when the session goes idle."""
    seq: int = 0
    queue: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    """Waiting prompts: (messageId, text)."""
    wake: anyio.Event | None = None
    running: bool = False


class SDKRuntime:
    """One runtime process: the sessions, the wire, and the shutdown rules."""

    def __init__(
        self,
        *,
        endpoint: ResolvedEndpoint,
        mode: Literal["ask", "execute"],
        max_steps: int,
        writer: wire.FrameWriter,
        store: SessionStore,
    ) -> None:
        """A runtime serving sessions stored in `store`, on `endpoint`."""
        self._endpoint = endpoint
        self._store = store
        self._mode: Literal["ask", "execute"] = mode
        self._max_steps = max_steps
        self._writer = writer
        self._workspace = Path.cwd()
        self._sessions: dict[str, _Session] = {}
        self._shutting_down = False
        self._cancel = CancelSignal()
        """Fires once when shutdown begins; every running turn hangs off it."""
        self._tg: anyio.abc.TaskGroup | None = None
        self._turns = 0
        self._turns_done = anyio.Event()
        self._stop = anyio.Event()

    # -- wire -------------------------------------------------------------------------------

    async def _notify(self, method: str, params: wire.JSONObject) -> None:
        if self._shutting_down:
            return
        try:
            await self._writer.send_notification(method, params)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            _log.debug("dropping a notification: the client is gone")

    async def _answer(self, request: wire.Request, result: wire.JSONObject) -> None:
        try:
            await self._writer.send_result(request.id, result)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            _log.debug("dropping an answer: the client is gone")

    async def _refuse(self, request: wire.Request, message: str) -> None:
        try:
            await self._writer.send_error(request.id, wire.INTERNAL_ERROR, message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            _log.debug("dropping an error answer: the client is gone")

    async def _event(self, session: _Session, kind: str, data: wire.JSONObject) -> None:
        if self._shutting_down:
            return
        session.seq += 1
        event = wire.SessionEvent(
            session_id=session.id, type=kind, seq=session.seq, time=now_iso(), data=data
        )
        await self._notify(wire.SESSION_EVENT, event.to_params())

    async def _status(self, session_id: str, status: wire.SessionStatusValue) -> None:
        await self._notify(
            wire.SESSION_STATUS,
            wire.SessionStatus(session_id=session_id, status=status).to_params(),
        )

    # -- requests ---------------------------------------------------------------------------

    async def handle(self, request: wire.Request) -> None:
        """Answers one request; invalid params get the runtime's own error text."""
        try:
            if request.method == wire.INITIALIZE:
                self._initialize(wire.InitializeParams.from_params(request.params))
                await self._answer(request, wire.InitializeResult(version=VERSION).to_result())
            elif request.method == wire.SESSION_PROMPT:
                params = wire.PromptParams.from_params(request.params)
                if self._shutting_down:
                    await self._refuse(request, wire.SHUTTING_DOWN_MESSAGE)
                    return
                await self._answer(request, self._enqueue(params).to_result())
            elif request.method == wire.SHUTDOWN:
                await self._answer(request, {})
                self.begin_shutdown()
            else:
                await self._refuse(request, wire.unknown_method_message(request.method))
        except wire.InvalidParamsError as error:
            await self._refuse(request, str(error))

    def _initialize(self, params: wire.InitializeParams) -> None:
        cwd = Path(params.cwd)
        if params.cwd and cwd.is_absolute() and cwd.is_dir():
            self._workspace = cwd.resolve()
        endpoint = self._endpoint
        if params.model:
            endpoint = dataclasses.replace(endpoint, model=params.model)
        if params.max_tokens is not None:
            endpoint = dataclasses.replace(endpoint, max_tokens=params.max_tokens)
        self._endpoint = endpoint

    def _enqueue(self, params: wire.PromptParams) -> wire.PromptResult:
        message_id = str(uuid.uuid4())
        session = self._sessions.get(params.session_id)
        if session is None:
            session = _Session(id=params.session_id)
            self._sessions[session.id] = session
            assert self._tg is not None
            self._tg.start_soon(self._session_worker, session)
        session.queue.append((message_id, params.text))
        if session.wake is not None:
            session.wake.set()
        return wire.PromptResult(message_id=message_id)

    # -- turns ------------------------------------------------------------------------------

    async def _session_worker(self, session: _Session) -> None:
        """Runs one session's prompts one at a time, in arrival order."""
        while not self._shutting_down:
            if not session.queue:
                # An idle session keeps no history in memory: the store has it.
                session.conversation = None
                if session.running:
                    session.running = False
                    await self._status(session.id, "idle")
                session.wake = anyio.Event()
                await session.wake.wait()
                continue
            message_id, text = session.queue.pop(0)
            if not session.running:
                session.running = True
                await self._status(session.id, "running")
            await self._event(
                session,
                wire.EVENT_INBOX_SPLICED,
                {
                    "inserted": [
                        {
                            "id": message_id,
                            "role": "user",
                            "content": [{"type": "text", "text": text}],
                        }
                    ]
                },
            )
            if self._turns == 0:
                self._turns_done = anyio.Event()
            self._turns += 1
            try:
                await self._turn(session, text)
            finally:
                self._turns -= 1
                if self._turns == 0:
                    self._turns_done.set()

    async def _turn(self, session: _Session, text: str) -> None:
        turn_id = str(uuid.uuid4())
        await self._event(session, wire.EVENT_TURN_START, {"turnId": turn_id})
        send, receive = anyio.create_memory_object_stream[AgentEvent](math.inf)

        def observe(event: AgentEvent) -> None:
            try:
                send.send_nowait(event)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

        conversation = await self._conversation(session)
        status: AgentStatus | None = None
        output = ""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._forward_events, session, receive)
            with send:
                try:
                    result = await conversation.run(text, self._cancel, observe)
                    status, output = result.status, result.output
                    if result.status == "failed":
                        _log.warning("turn failed in session %s: %s", session.id, result.error)
                except Exception:
                    _log.exception("the agent turn failed unexpectedly")
        await self._event(
            session,
            wire.EVENT_ASSISTANT_MESSAGE,
            {
                "message": {
                    "id": str(uuid.uuid4()),
                    "role": "assistant",
                    "content": [{"type": "text", "text": output}] if output else [],
                }
            },
        )
        await self._event(
            session, wire.EVENT_TURN_END, {"turnId": turn_id, "reason": turn_end_reason(status)}
        )

    async def _conversation(self, session: _Session) -> Conversation:
        """The session's conversation: continued from the store when this id was seen before.

        The runtime's current cwd, mode and model (from `initialize`) apply to every turn.
        """
        conversation = session.conversation
        if conversation is None:
            stored = await self._store.load(session.id) or StoredSession(
                session_id=session.id,
                cwd=self._workspace,
                mode=self._mode,
                model=self._endpoint.model,
            )
            conversation = Conversation(
                stored, store=self._store, endpoint=self._endpoint, max_steps=self._max_steps
            )
            session.conversation = conversation
        conversation.set_endpoint(self._endpoint)
        stored = conversation.stored
        stored.cwd, stored.mode, stored.model = self._workspace, self._mode, self._endpoint.model
        return conversation

    async def _forward_events(
        self, session: _Session, receive: anyio.abc.ObjectReceiveStream[AgentEvent]
    ) -> None:
        children: dict[str, _Session] = {}
        async with receive:
            async for event in receive:
                await self._forward(session, event, children)

    async def _forward_loop_event(
        self, session: _Session, event: TextDelta | ReasoningDelta | ToolStarted | ToolEnded
    ) -> None:
        """One event of an agent loop (the session's own, or a child's on its own session)."""
        if isinstance(event, TextDelta | ReasoningDelta):
            chunk = "text-delta" if isinstance(event, TextDelta) else "reasoning-delta"
            await self._event(
                session, wire.EVENT_ASSISTANT_CHUNK, {"chunk": {"type": chunk, "text": event.text}}
            )
        elif isinstance(event, ToolStarted):
            await self._event(
                session,
                wire.EVENT_TOOL_CALL,
                {"callId": event.call_id, "name": event.name, "arguments": event.arguments},
            )
        else:
            await self._event(
                session,
                wire.EVENT_TOOL_RESULT,
                {
                    "callId": event.call_id,
                    "name": event.name,
                    "content": event.content,
                    "isError": event.is_error,
                },
            )

    async def _forward(
        self, session: _Session, event: AgentEvent, children: dict[str, _Session]
    ) -> None:
        """Forwards an event; a delegated child streams on its own session id, as the runtime
        does for its in-process children, between `subagent.started` and `subagent.finished`."""
        if isinstance(event, TextDelta | ReasoningDelta | ToolStarted | ToolEnded):
            await self._forward_loop_event(session, event)
        elif isinstance(event, ChildStarted):
            child = _Session(id=f"session-{uuid.uuid4().hex}")
            children[event.child_id] = child
            started = wire.SubagentStarted(parent_session_id=session.id, child_session_id=child.id)
            await self._notify(wire.SUBAGENT_STARTED, started.to_params())
            await self._status(child.id, "running")
            await self._event(child, wire.EVENT_TURN_START, {"turnId": str(uuid.uuid4())})
        elif isinstance(event, ChildEvent):
            child = children.get(event.child_id)
            inner = event.event
            if child is not None and not isinstance(inner, Retrying):
                await self._forward_loop_event(child, inner)
        elif isinstance(event, ChildEnded):
            child = children.pop(event.child_id, None) or _Session(id=f"session-{uuid.uuid4().hex}")
            reason = turn_end_reason(_CHILD_STATUSES.get(event.status))
            await self._event(child, wire.EVENT_TURN_END, {"reason": reason})
            await self._status(child.id, "idle")
            finished = wire.SubagentFinished(
                provider="model",
                agent_id=event.child_id,
                parent_session_id=session.id,
                child_session_id=child.id,
                status="ok" if event.status == "completed" else "error",
                stop_reason=_child_stop_reason(event.status),
            )
            await self._notify(wire.SUBAGENT_FINISHED, finished.to_params())

    # -- lifecycle --------------------------------------------------------------------------

    def begin_shutdown(self) -> None:
        """Stops notifications, cancels every turn and lets `serve` finish (idempotent)."""
        if self._shutting_down:
            return
        self._shutting_down = True
        self._cancel.cancel()
        for session in self._sessions.values():
            if session.wake is not None:
                session.wake.set()
        self._stop.set()

    async def serve(self, receive: anyio.abc.ByteReceiveStream) -> None:
        """Reads requests until `shutdown`, EOF or a signal; then waits (bounded) for turns."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._read, receive)
            tg.start_soon(self._watch_signals)
            await self._stop.wait()
            if self._turns:
                with anyio.move_on_after(SHUTDOWN_GRACE_SECONDS, shield=True):
                    await self._turns_done.wait()
            tg.cancel_scope.cancel()

    async def _read(self, receive: anyio.abc.ByteReceiveStream) -> None:
        async for line in stdin_lines(receive):
            frame = wire.parse_frame(line)
            if isinstance(frame, wire.Request):
                # Inline, in arrival order: `shutdown` is answered before anything after it,
                # and a prompt read after it is refused with the runtime's text.
                await self.handle(frame)
        self.begin_shutdown()

    async def _watch_signals(self) -> None:
        if sys.platform == "win32":
            return
        import signal

        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                self.begin_shutdown()
                return


async def _serve(
    endpoint: ResolvedEndpoint, mode: Literal["ask", "execute"], max_steps: int, state_dir: Path
) -> None:
    async with open_stdio_streams() as (receive, send):
        runtime = SDKRuntime(
            endpoint=endpoint,
            mode=mode,
            max_steps=max_steps,
            writer=wire.FrameWriter(send),
            store=SessionStore(state_dir, "sdk"),
        )
        await runtime.serve(receive)


def serve_sdk(
    *,
    endpoint: ResolvedEndpoint,
    mode: WorkMode,
    max_steps: int,
    state_dir: Path,
) -> int:
    """Serves until `shutdown`, stdin EOF or SIGTERM; returns the exit code (0)."""
    anyio.run(_serve, endpoint, mode, max_steps, state_dir, backend="asyncio")
    return 0


def sdk_runtime_command(
    *,
    mode: WorkMode,
    model: str | None,
    base_url: str | None,
    max_steps: int,
    config: Path | None,
    state_dir: Path | None,
    verbose: bool,
    log_file: Path | None,
) -> int:
    """`harness sdk-runtime`: the config, endpoint, host logs and state directory prepared,
    then `serve_sdk`.

    Raises:
        UsageError: a bad config or base URL, or no key for the DeepSeek API.
    """
    settings = load_config(config, workspace=Path.cwd())
    endpoint = resolve_endpoint(settings.model, base_url=base_url, model=model)
    state = prepare_server(state_dir=state_dir, verbose=verbose, log_file=log_file)
    return serve_sdk(endpoint=endpoint, mode=mode, max_steps=max_steps, state_dir=state)
