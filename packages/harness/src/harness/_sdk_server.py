"""`harness sdk-runtime`: the direct-model agent over the DeepSeek Harness SDK stdio protocol.

Wire (see the spec's sdk.md): newline-delimited JSON-RPC 2.0; `initialize`, `session/prompt`
(answered at once with a `messageId` receipt; prompts to one session queue) and `shutdown`.
Every session-log append is a `session.event {sessionId, event: {type, seq, time, data}}`
with `seq` counting per session; `session.status` brackets each busy period; in-process
children (subagent_delegate) are announced with `subagent.started` / `subagent.finished`.
`shutdown`, stdin EOF and SIGTERM cancel running turns, wait (bounded) for their cleanup and
exit 0; nothing is sent after shutdown began.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import anyio.abc
from model_agent import (
    Agent,
    AgentEvent,
    ChildEnded,
    ChildStarted,
    ReasoningDelta,
    TextDelta,
    ToolEnded,
    ToolStarted,
)
from subagent_core import CancelSignal

from ._agent_factory import agent_config
from ._endpoint import ResolvedEndpoint
from ._stdio import StdioLines
from ._version import VERSION

_log = logging.getLogger("harness.sdk_runtime")

SERVER_NAME = "deepseek-harness-sdk-runtime"
MAX_FRAME_BYTES = 16 * 1024 * 1024
SHUTDOWN_GRACE_SECONDS = 15.0
"""How long shutdown waits for cancelled turns to clean up their commands and children."""

_INTERNAL_ERROR = -32603


class _RequestFailedError(Exception):
    """A handler failure, answered as JSON-RPC -32603 with this (safe) message."""


def _turn_end_reason(status: str) -> dict[str, Any]:
    """The closed `turn/end` reason for an agent status; error text is fixed, never the model's."""
    if status == "completed":
        return {"kind": "completed"}
    if status == "max-tokens":
        return {"kind": "max-tokens"}
    if status == "refusal":
        return {"kind": "blocked"}
    if status == "cancelled":
        return {"kind": "aborted", "reason": {"kind": "disposed"}}
    if status == "step-limit":
        return {
            "kind": "error",
            "error": {"message": "the step limit was reached", "code": "step-limit"},
        }
    return {"kind": "error", "error": {"message": "the model turn failed", "code": "turn-failed"}}


@dataclass(slots=True)
class _Session:
    id: str
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
        stdio: StdioLines,
    ) -> None:
        self._endpoint = endpoint
        self._mode: Literal["ask", "execute"] = mode
        self._max_steps = max_steps
        self._stdio = stdio
        self._workspace = Path.cwd()
        self._sessions: dict[str, _Session] = {}
        self._shutting_down = False
        self._cancel = CancelSignal()
        """Fires once when shutdown begins; every running turn hangs off it."""
        self._write_lock = anyio.Lock()
        self._tg: anyio.abc.TaskGroup | None = None
        self._turns = 0
        self._turns_done = anyio.Event()
        self._stop = anyio.Event()

    # -- wire -------------------------------------------------------------------------------

    async def _send(self, frame: Mapping[str, Any], *, always: bool = False) -> None:
        if self._shutting_down and not always:
            return
        data = json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        async with self._write_lock:
            await self._stdio.write(data)

    async def _notify(self, method: str, params: Mapping[str, Any]) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _event(self, session: _Session, kind: str, data: Mapping[str, Any]) -> None:
        if self._shutting_down:
            return
        session.seq += 1
        event = {
            "type": kind,
            "seq": session.seq,
            "time": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "data": data,
        }
        await self._notify("session.event", {"sessionId": session.id, "event": event})

    async def _status(self, session_id: str, status: Literal["running", "idle"]) -> None:
        await self._notify("session.status", {"sessionId": session_id, "status": status})

    # -- requests ---------------------------------------------------------------------------

    async def handle_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            _log.debug("ignoring a line that is not JSON")
            return
        if not isinstance(message, dict):
            return
        message = cast(dict[str, Any], message)
        method = message.get("method")
        request_id = message.get("id")
        if not isinstance(method, str):
            return  # a response or garbage: this runtime sends no requests
        params_raw = message.get("params")
        params = cast(dict[str, Any], params_raw) if isinstance(params_raw, dict) else {}
        is_request = isinstance(request_id, str | int) and not isinstance(request_id, bool)
        try:
            result = await self._dispatch(method, params)
        except _RequestFailedError as error:
            if is_request:
                await self._send(
                    {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "error": {"code": _INTERNAL_ERROR, "message": str(error)},
                    },
                    always=True,
                )
            return
        if is_request:
            await self._send({"jsonrpc": "2.0", "id": request_id, "result": result}, always=True)
        if method == "shutdown":
            self.begin_shutdown()

    async def _dispatch(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            return self._initialize(params)
        if method == "session/prompt":
            return self._prompt(params)
        if method == "shutdown":
            return {}
        raise _RequestFailedError(f"unknown DeepSeek Harness SDK runtime method: {method}")

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        max_tokens = params.get("maxTokens")
        if max_tokens is not None and (
            isinstance(max_tokens, bool)
            or not isinstance(max_tokens, int)
            or not 0 < max_tokens <= 2**53 - 1
        ):
            raise _RequestFailedError("initialize maxTokens must be a positive safe integer")
        cwd = params.get("cwd")
        if isinstance(cwd, str) and cwd and Path(cwd).is_absolute() and Path(cwd).is_dir():
            self._workspace = Path(cwd).resolve()
        model = params.get("model")
        if isinstance(model, str) and model:
            self._endpoint = _replace_endpoint(self._endpoint, model=model, max_tokens=max_tokens)
        elif max_tokens is not None:
            self._endpoint = _replace_endpoint(self._endpoint, max_tokens=max_tokens)
        return {"serverInfo": {"name": SERVER_NAME, "version": VERSION}}

    def _prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        if self._shutting_down:
            raise _RequestFailedError("SDK server is shutting down")
        session_id = params.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise _RequestFailedError("session/prompt sessionId must be a non-empty string")
        blocks = params.get("contentBlocks")
        text = ""
        if isinstance(blocks, list):
            for block in cast(list[object], blocks):
                if isinstance(block, dict):
                    block = cast(dict[str, Any], block)
                    if block.get("type") == "text" and isinstance(block.get("text"), str):
                        text += block["text"]
        message_id = str(uuid.uuid4())
        session = self._sessions.get(session_id)
        if session is None:
            session = _Session(id=session_id)
            self._sessions[session_id] = session
            assert self._tg is not None
            self._tg.start_soon(self._session_worker, session)
        session.queue.append((message_id, text))
        if session.wake is not None:
            session.wake.set()
        return {"messageId": message_id}

    # -- turns ------------------------------------------------------------------------------

    async def _session_worker(self, session: _Session) -> None:
        """Runs one session's prompts one at a time, in arrival order."""
        while not self._shutting_down:
            if not session.queue:
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
                "agent/inbox/spliced",
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
        await self._event(session, "turn/start", {"turnId": turn_id})
        send, receive = anyio.create_memory_object_stream[AgentEvent](math.inf)

        def observe(event: AgentEvent) -> None:
            try:
                send.send_nowait(event)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

        config = agent_config(
            self._endpoint, workspace=self._workspace, mode=self._mode, max_steps=self._max_steps
        )
        agent = Agent(config, observer=observe)
        status = "failed"
        output = ""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._forward_events, session, receive)
            with send:
                try:
                    result = await agent.run(text, self._cancel)
                    status, output = str(result.status), result.output
                except Exception:
                    _log.exception("the agent turn failed unexpectedly")
        await self._event(
            session,
            "assistant/message",
            {
                "message": {
                    "id": str(uuid.uuid4()),
                    "role": "assistant",
                    "content": [{"type": "text", "text": output}] if output else [],
                }
            },
        )
        await self._event(
            session, "turn/end", {"turnId": turn_id, "reason": _turn_end_reason(status)}
        )

    async def _forward_events(
        self, session: _Session, receive: anyio.abc.ObjectReceiveStream[AgentEvent]
    ) -> None:
        children: dict[str, str] = {}
        async with receive:
            async for event in receive:
                await self._forward(session, event, children)

    async def _forward(
        self, session: _Session, event: AgentEvent, children: dict[str, str]
    ) -> None:
        if isinstance(event, TextDelta):
            await self._event(
                session, "assistant/chunk", {"chunk": {"type": "text-delta", "text": event.text}}
            )
        elif isinstance(event, ReasoningDelta):
            await self._event(
                session,
                "assistant/chunk",
                {"chunk": {"type": "reasoning-delta", "text": event.text}},
            )
        elif isinstance(event, ToolStarted):
            await self._event(
                session,
                "tool/call",
                {"callId": event.call_id, "name": event.name, "arguments": event.arguments},
            )
        elif isinstance(event, ToolEnded):
            await self._event(
                session,
                "tool/result",
                {
                    "callId": event.call_id,
                    "name": event.name,
                    "content": event.content,
                    "isError": event.is_error,
                },
            )
        elif isinstance(event, ChildStarted):
            child_session = f"session-{uuid.uuid4().hex}"
            children[event.child_id] = child_session
            await self._notify(
                "subagent.started",
                {"parentSessionId": session.id, "childSessionId": child_session},
            )
        elif isinstance(event, ChildEnded):
            child_session = children.pop(event.child_id, f"session-{uuid.uuid4().hex}")
            ok = event.status == "completed"
            await self._notify(
                "subagent.finished",
                {
                    "provider": "model",
                    "agentId": event.child_id,
                    "parentSessionId": session.id,
                    "childSessionId": child_session,
                    "status": "ok" if ok else "error",
                    "stopReason": _child_stop_reason(event.status),
                },
            )

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

    async def serve(self) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._read)
            tg.start_soon(self._watch_signals)
            await self._stop.wait()
            if self._turns:
                with anyio.move_on_after(SHUTDOWN_GRACE_SECONDS, shield=True):
                    await self._turns_done.wait()
            tg.cancel_scope.cancel()

    async def _read(self) -> None:
        while (line := await self._stdio.receive_line()) is not None:
            if line.strip():
                await self.handle_line(line)
        self.begin_shutdown()

    async def _watch_signals(self) -> None:
        if sys.platform == "win32":
            return
        import signal

        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                self.begin_shutdown()
                return


def _child_stop_reason(status: str) -> str:
    return {"completed": "completed", "cancelled": "aborted"}.get(status, "error")


def _replace_endpoint(
    endpoint: ResolvedEndpoint, *, model: str | None = None, max_tokens: int | None = None
) -> ResolvedEndpoint:
    import dataclasses

    changes: dict[str, Any] = {}
    if model is not None:
        changes["model"] = model
    if max_tokens is not None:
        changes["max_tokens"] = max_tokens
    return dataclasses.replace(endpoint, **changes)


async def _serve(
    endpoint: ResolvedEndpoint, mode: Literal["ask", "execute"], max_steps: int
) -> None:
    stdio = await StdioLines.open(MAX_FRAME_BYTES)
    runtime = SDKRuntime(endpoint=endpoint, mode=mode, max_steps=max_steps, stdio=stdio)
    try:
        await runtime.serve()
    finally:
        stdio.close()


def serve_sdk(
    *, endpoint: ResolvedEndpoint, mode: Literal["ask", "execute"], max_steps: int
) -> int:
    """Serves until `shutdown`, stdin EOF or SIGTERM; returns the exit code (0)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    anyio.run(_serve, endpoint, mode, max_steps, backend="asyncio")
    return 0
