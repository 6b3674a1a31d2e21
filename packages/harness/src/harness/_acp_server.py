"""`harness acp-agent`: the direct-model agent behind the official `acp` SDK, on stdio.

This is the one module that touches the asyncio-only `acp` SDK on the server side. Each
`session/prompt` runs one `model_agent.Agent` turn; the agent's typed events become
`session/update` notifications (text, thoughts, tool calls) sent in order before the response.
`session/cancel` fires the turn's cancel signal, which reaches running commands and children.
stdin EOF, SIGTERM and SIGINT cancel every turn, wait (bounded) for their cleanup and exit 0.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import anyio.abc
from acp import PROTOCOL_VERSION, RequestError
from acp.core import AgentSideConnection
from acp.helpers import (
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
)
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    StopReason,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)
from model_agent import (
    Agent,
    AgentEvent,
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

_log = logging.getLogger("harness.acp_agent")

SHUTDOWN_GRACE_SECONDS = 15.0
"""How long EOF/SIGTERM waits for cancelled turns to clean up their commands and children."""

_STOP_REASONS: dict[str, StopReason] = {
    "completed": "end_turn",
    "max-tokens": "max_tokens",
    "refusal": "refusal",
    "cancelled": "cancelled",
    "step-limit": "max_turn_requests",
}
_TOOL_KINDS: dict[str, Literal["read", "edit", "search", "execute", "other"]] = {
    "process_execute": "execute",
    "subagent_delegate": "other",
    "read_file": "read",
    "list_directory": "read",
    "search_text": "search",
    "write_file": "edit",
    "edit_file": "edit",
}
_ALLOW_OPTION = "allow-once"
_REJECT_OPTION = "reject-once"

_Update = AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress


class TurnFailedError(RequestError):
    """A failed turn: JSON-RPC -32603 `Internal error` with no `data` (model text is not safe)."""

    def __init__(self) -> None:
        super().__init__(-32603, "Internal error")

    def to_error_obj(self) -> dict[str, Any]:
        return {"code": self.code, "message": "Internal error"}


@dataclass(slots=True)
class _Session:
    id: str
    workspace: Path
    cancel: CancelSignal | None = None
    """The running turn's signal; None while idle."""
    last_call: dict[str, str] = field(default_factory=dict[str, str])
    """Tool name → id of its latest started call, so a permission request names the call."""


class HarnessACPAgent:
    """The ACP `Agent` the SDK's router dispatches to (handlers take `**kwargs` for `_meta`)."""

    def __init__(
        self,
        *,
        endpoint: ResolvedEndpoint,
        mode: Literal["ask", "execute"],
        ask_permission: bool,
        max_steps: int,
    ) -> None:
        self._endpoint = endpoint
        self._mode: Literal["ask", "execute"] = mode
        self._ask_permission = ask_permission
        self._max_steps = max_steps
        self._conn: AgentSideConnection | None = None
        self._sessions: dict[str, _Session] = {}
        self._running = 0
        self._idle: anyio.Event | None = None
        self._closing = False

    def on_connect(self, conn: AgentSideConnection) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: object = None,
        client_info: object = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="harness-acp-agent", title="harness", version=VERSION),
        )

    async def new_session(
        self,
        cwd: str,
        mcp_servers: object = None,
        additional_directories: object = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        workspace = anyio.Path(cwd)
        if not workspace.is_absolute() or not await workspace.is_dir():
            raise RequestError.invalid_params({"cwd": "must be an absolute, existing directory"})
        resolved = Path(await workspace.resolve())
        session = _Session(id=f"sess_{uuid.uuid4().hex}", workspace=resolved)
        self._sessions[session.id] = session
        return NewSessionResponse(session_id=session.id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.cancel is not None:
            session.cancel.cancel()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": "unknown session"})
        if session.cancel is not None:
            raise RequestError.invalid_request({"sessionId": "a prompt is already running"})
        if self._closing:
            raise TurnFailedError
        text = "".join(block.text for block in prompt if isinstance(block, TextContentBlock))
        cancel = CancelSignal()
        session.cancel = cancel
        self._running += 1
        if self._idle is None or self._idle.is_set():
            self._idle = anyio.Event()
        try:
            status = await self._turn(session, text, cancel)
        finally:
            session.cancel = None
            self._running -= 1
            if self._running == 0:
                self._idle.set()
        stop_reason = _STOP_REASONS.get(status)
        if stop_reason is None:
            raise TurnFailedError
        return PromptResponse(stop_reason=stop_reason)

    async def _turn(self, session: _Session, text: str, cancel: CancelSignal) -> str:
        send, receive = anyio.create_memory_object_stream[_Update](math.inf)

        def observe(event: AgentEvent) -> None:
            update = self._update_for(session, event)
            if update is not None:
                try:
                    send.send_nowait(update)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    pass

        config = agent_config(
            self._endpoint,
            workspace=session.workspace,
            mode=self._mode,
            max_steps=self._max_steps,
            approve=self._approver(session, cancel) if self._ask_permission else None,
        )
        agent = Agent(config, observer=observe)
        status = "failed"
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._pump, session.id, receive)
            with send:
                try:
                    status = str((await agent.run(text, cancel)).status)
                except Exception:
                    _log.exception("the agent turn failed unexpectedly")
        return status

    def _update_for(self, session: _Session, event: AgentEvent) -> _Update | None:
        if isinstance(event, TextDelta):
            return update_agent_message_text(event.text) if event.text else None
        if isinstance(event, ReasoningDelta):
            return update_agent_thought_text(event.text) if event.text else None
        if isinstance(event, ToolStarted):
            session.last_call[event.name] = event.call_id
            return start_tool_call(
                event.call_id,
                event.name,
                kind=_TOOL_KINDS.get(event.name, "other"),
                status="in_progress",
            )
        if isinstance(event, ToolEnded):
            return update_tool_call(
                event.call_id, status="failed" if event.is_error else "completed"
            )
        return None

    async def _pump(self, session_id: str, receive: anyio.abc.ObjectReceiveStream[_Update]) -> None:
        """Sends updates in order; a dead client only drops them (the turn still ends)."""
        async with receive:
            async for update in receive:
                conn = self._conn
                if conn is None:
                    continue
                try:
                    await conn.session_update(session_id=session_id, update=update)
                except Exception:
                    _log.debug("dropping a session/update: the client is gone")

    def _approver(self, session: _Session, cancel: CancelSignal) -> Any:
        async def approve(tool_name: str, arguments: Mapping[str, Any]) -> bool:
            conn = self._conn
            if conn is None or cancel.cancelled:
                return False
            call_id = session.last_call.get(tool_name) or f"call_{uuid.uuid4().hex}"
            kind = _TOOL_KINDS.get(tool_name, "other")
            allowed = False

            async def ask() -> None:
                nonlocal allowed
                try:
                    response = await conn.request_permission(
                        session_id=session.id,
                        tool_call=ToolCallUpdate(
                            tool_call_id=call_id,
                            title=tool_name,
                            kind=kind,
                            status="pending",
                            raw_input=dict(arguments),
                        ),
                        options=[
                            PermissionOption(
                                option_id=_ALLOW_OPTION, name="Allow", kind="allow_once"
                            ),
                            PermissionOption(
                                option_id=_REJECT_OPTION, name="Reject", kind="reject_once"
                            ),
                        ],
                    )
                except Exception:
                    _log.debug("the permission request failed; treating it as a refusal")
                    return
                outcome = response.outcome
                allowed = isinstance(outcome, AllowedOutcome) and outcome.option_id == _ALLOW_OPTION
                tg.cancel_scope.cancel()

            async def on_cancel() -> None:
                await cancel.wait()
                tg.cancel_scope.cancel()

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                tg.start_soon(on_cancel)
            return allowed and not cancel.cancelled

        return approve

    def cancel_all(self) -> None:
        """Cancels every running turn (EOF, SIGTERM, SIGINT) and refuses new ones."""
        self._closing = True
        for session in self._sessions.values():
            if session.cancel is not None:
                session.cancel.cancel()

    async def wait_idle(self) -> None:
        """Returns once no turn is running."""
        if self._running and self._idle is not None:
            await self._idle.wait()


async def _watch_signals(agent: HarnessACPAgent, scope: anyio.CancelScope) -> None:
    if sys.platform == "win32":
        return
    import signal

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            agent.cancel_all()
            scope.cancel()
            return


class _StdioTransport:
    """The SDK's message-level `Transport` over our stdio lines (bounded frames)."""

    def __init__(self, stdio: StdioLines) -> None:
        self._stdio = stdio
        self._lock = anyio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        async with self._lock:
            await self._stdio.write(data)

    async def receive(self) -> dict[str, Any] | None:
        while (line := await self._stdio.receive_line()) is not None:
            try:
                message = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                _log.warning("ignoring an input line that is not JSON")
                continue
            if isinstance(message, dict):
                return cast(dict[str, Any], message)
        return None

    async def close(self) -> None:
        self._stdio.close()


async def _serve(agent: HarnessACPAgent) -> None:
    stdio = await StdioLines.open()
    conn = AgentSideConnection(cast(Any, agent), _StdioTransport(stdio), listening=False)
    async with anyio.create_task_group() as tg:

        async def listen() -> None:
            await conn.listen()
            tg.cancel_scope.cancel()

        tg.start_soon(listen)
        tg.start_soon(_watch_signals, agent, tg.cancel_scope)
    agent.cancel_all()
    with anyio.move_on_after(SHUTDOWN_GRACE_SECONDS, shield=True):
        await agent.wait_idle()
    with anyio.move_on_after(2.0, shield=True):
        await conn.close()


def serve_acp(
    *,
    endpoint: ResolvedEndpoint,
    mode: Literal["ask", "execute"],
    ask_permission: bool,
    max_steps: int,
) -> int:
    """Serves until stdin EOF, SIGTERM or SIGINT; returns the exit code (0)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    agent = HarnessACPAgent(
        endpoint=endpoint, mode=mode, ask_permission=ask_permission, max_steps=max_steps
    )
    anyio.run(_serve, agent, backend="asyncio")
    return 0
