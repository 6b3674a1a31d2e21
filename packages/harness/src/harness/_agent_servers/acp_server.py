"""`harness acp-agent`'s agent: sessions, modes, config options and prompts.

This module (with the other `acp_*` modules) is where the asyncio-only `acp` SDK serves;
`import acp` happens only when the command runs. A session
is a conversation (`Conversation`): each `session/prompt` continues its history, and every
session is stored under the state directory, so `session/list`, `session/load` (the history
replayed as updates) and `session/resume` work across restarts. Modes `ask`/`execute` are
ACP session modes; the model is a session config option. Without an API key the agent still
starts: it advertises an environment-variable auth method and answers `session/new` and
`session/prompt` with `auth_required` (-32000).

The agent's typed events become `session/update` notifications, sent in order before the
response; tool calls carry their ACP kind, a title, locations and content (a diff for edits,
the bounded output for commands). `session/cancel` fires the turn's cancel signal, which
reaches running commands and children. stdin EOF, SIGTERM and SIGINT cancel every turn, wait
(bounded) for their cleanup and exit 0.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from acp import PROTOCOL_VERSION, RequestError
from acp.core import AgentSideConnection
from acp.helpers import (
    update_current_mode,
)
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    AuthEnvVar,
    ConfigOptionUpdate,
    EmbeddedResourceContentBlock,
    EnvVarAuthMethod,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionInfoUpdate,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    StopReason,
    TextContentBlock,
    TextResourceContents,
)
from model_agent import (
    AgentEvent,
    AgentStatus,
)
from subagent_core import CancelSignal

from harness._config.endpoint import ResolvedEndpoint
from harness._config.settings import API_KEY_ENV, DEFAULT_BASE_URL, DEFAULT_MODEL
from harness._console.telemetry import continued_trace
from harness._version import VERSION

from .acp_mcp import mcp_servers_from_acp
from .acp_tool_calls import ACPSession, ask_client, replayed, update_for
from .acp_updates import Updates
from .conversation import Conversation
from .conversation_store import SessionMode as ModeId
from .conversation_store import SessionStore, StoredSession

_log = logging.getLogger("harness.acp_agent")

MAX_OPEN_SESSIONS = 64
"""Sessions kept in memory; older idle ones are reopened from the store when used again."""
LIST_PAGE_SIZE = 50
"""Sessions per `session/list` page."""
AUTH_METHOD_ID = "deepseek-api-key"
MODE_OPTION_ID = "mode"
MODEL_OPTION_ID = "model"
DEEPSEEK_MODELS = (DEFAULT_MODEL, "deepseek-reasoner")
"""Offered as model choices when the endpoint is DeepSeek's own."""

_STOP_REASONS: dict[AgentStatus, StopReason] = {
    "completed": "end_turn",
    "max-tokens": "max_tokens",
    "refusal": "refusal",
    "cancelled": "cancelled",
    "step-limit": "max_turn_requests",
}
_MODES: dict[ModeId, SessionMode] = {
    "ask": SessionMode(
        id="ask",
        name="Ask",
        description="Reads the workspace and answers; never runs a command or writes a file.",
    ),
    "execute": SessionMode(
        id="execute",
        name="Execute",
        description="May change files and run commands (each action asked for first).",
    ),
}


class TurnFailedError(RequestError):
    """A failed turn: JSON-RPC -32603 `Internal error` with no `data` (model text is not safe)."""

    def __init__(self) -> None:
        """A failed turn's error, with no data."""
        super().__init__(-32603, "Internal error")

    def to_error_obj(self) -> dict[str, Any]:
        """The error object as sent: code and the fixed message only."""
        return {"code": self.code, "message": "Internal error"}


def _prompt_text(blocks: Sequence[Any]) -> str:
    """The prompt as text: text blocks, embedded text resources and links; media refused."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if not isinstance(resource, TextResourceContents):
                raise RequestError.invalid_params({"prompt": "binary resources are not supported"})
            parts.append(
                f"\n<resource uri={json.dumps(resource.uri)}>\n{resource.text}\n</resource>\n"
            )
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"\n[resource: {block.name} {block.uri}]\n")
        else:
            raise RequestError.invalid_params({"prompt": "only text and resources are supported"})
    return "".join(parts)


class HarnessACPAgent:
    """The ACP `Agent` the SDK's router dispatches to (handlers take `**kwargs` for `_meta`)."""

    def __init__(
        self,
        *,
        endpoint: ResolvedEndpoint,
        mode: ModeId,
        ask_permission: bool,
        max_steps: int,
        store: SessionStore,
    ) -> None:
        """An agent serving sessions stored in `store`, on `endpoint`."""
        self._endpoint = endpoint
        self._mode: ModeId = mode
        self._ask_permission = ask_permission
        self._max_steps = max_steps
        self._store = store
        self._conn: AgentSideConnection | None = None
        self._sessions: dict[str, ACPSession] = {}
        self._running = 0
        self._idle: anyio.Event | None = None
        self._closing = False

    def on_connect(self, conn: AgentSideConnection) -> None:
        """The SDK hands over the connection once it exists."""
        self._conn = conn

    # -- auth -------------------------------------------------------------------------------

    @property
    def _needs_key(self) -> bool:
        endpoint = self._endpoint
        return endpoint.api_key is None and endpoint.base_url.rstrip("/") == DEFAULT_BASE_URL

    def _require_auth(self) -> None:
        if self._needs_key:
            raise RequestError.auth_required({"authMethods": [AUTH_METHOD_ID]})

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """ACP `authenticate`: the key comes from the environment; this only checks it is there."""
        if method_id != AUTH_METHOD_ID:
            raise RequestError.invalid_params({"methodId": "unknown auth method"})
        key = os.environ.get(API_KEY_ENV) or None
        if key is not None and self._needs_key:
            self._endpoint = dataclasses.replace(self._endpoint, api_key=key)
            for session in self._sessions.values():
                session.conversation.set_endpoint(self._endpoint)
        self._require_auth()
        return AuthenticateResponse()

    # -- lifecycle requests -----------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: object = None,
        client_info: object = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """ACP `initialize`: capabilities, modes, the env-var auth method."""
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(), resume=SessionResumeCapabilities()
                ),
            ),
            auth_methods=[
                EnvVarAuthMethod(
                    type="env_var",
                    id=AUTH_METHOD_ID,
                    name="DeepSeek API key",
                    description=f"Start the agent with {API_KEY_ENV} set to your API key.",
                    vars=[AuthEnvVar(name=API_KEY_ENV, label="DeepSeek API key")],
                    link="https://platform.deepseek.com/api_keys",
                )
            ],
            agent_info=Implementation(name="harness-acp-agent", title="harness", version=VERSION),
        )

    async def _workspace(self, cwd: str) -> Path:
        workspace = anyio.Path(cwd)
        if not workspace.is_absolute() or not await workspace.is_dir():
            raise RequestError.invalid_params({"cwd": "must be an absolute, existing directory"})
        return Path(await workspace.resolve())

    def _open(self, stored: StoredSession) -> ACPSession:
        session_holder: list[ACPSession] = []

        async def approve(tool_name: str, arguments: Mapping[str, Any]) -> bool:
            return await ask_client(self._conn, session_holder[0], tool_name, arguments)

        conversation = Conversation(
            stored,
            store=self._store,
            endpoint=self._endpoint,
            max_steps=self._max_steps,
            approve=approve if self._ask_permission else None,
        )
        session = ACPSession(conversation=conversation)
        session_holder.append(session)
        self._sessions[session.id] = session
        self._evict_idle()
        return session

    def _evict_idle(self) -> None:
        """Keeps at most `MAX_OPEN_SESSIONS` in memory: the oldest idle ones go (all are stored).

        A client that comes back to an evicted session reopens it from the store
        (its MCP servers must then be sent again with `session/load` or `session/resume`).
        """
        for session_id in list(self._sessions):
            if len(self._sessions) <= MAX_OPEN_SESSIONS:
                return
            if self._sessions[session_id].cancel is None:
                del self._sessions[session_id]

    async def new_session(
        self,
        cwd: str,
        mcp_servers: object = None,
        additional_directories: object = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        """ACP `session/new`: a stored session in an absolute, existing workspace."""
        self._require_auth()
        workspace = await self._workspace(cwd)
        servers = mcp_servers_from_acp(mcp_servers, workspace)
        stored = StoredSession(
            session_id=f"sess_{uuid.uuid4().hex}",
            cwd=workspace,
            mode=self._mode,
            model=self._endpoint.model,
        )
        session = self._open(stored)
        session.mcp_servers = servers
        await session.conversation.save()
        return NewSessionResponse(
            session_id=session.id,
            modes=self._mode_state(stored),
            config_options=self._config_options(stored),
        )

    async def _find(self, session_id: str, cwd: str, mcp_servers: object) -> ACPSession:
        workspace = await self._workspace(cwd)
        servers = mcp_servers_from_acp(mcp_servers, workspace)
        session = self._sessions.get(session_id)
        if session is None:
            stored = await self._store.load(session_id)
            if stored is None:
                raise RequestError.invalid_params({"sessionId": "unknown session"})
            session = self._open(stored)
        if session.cancel is None:
            session.stored.cwd = workspace
            session.mcp_servers = servers
        return session

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: object = None,
        additional_directories: object = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        """ACP `session/load`: reopens a stored session and replays its history as updates."""
        session = await self._find(session_id, cwd, mcp_servers)
        await self._replay(session)
        return LoadSessionResponse(
            modes=self._mode_state(session.stored),
            config_options=self._config_options(session.stored),
        )

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: object = None,
        mcp_servers: object = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        """ACP `session/resume`: reopens a stored session without replaying it."""
        session = await self._find(session_id, cwd, mcp_servers)
        return ResumeSessionResponse(
            modes=self._mode_state(session.stored),
            config_options=self._config_options(session.stored),
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """ACP `session/list`: stored sessions, newest first, a page at a time."""
        start = 0
        if cursor is not None:
            if not cursor.isdigit():
                raise RequestError.invalid_params({"cursor": "not a cursor of this agent"})
            start = int(cursor)
        where = Path(await anyio.Path(cwd).resolve()) if cwd else None
        sessions = await self._store.list(cwd=where)
        page = sessions[start : start + LIST_PAGE_SIZE]
        following = start + LIST_PAGE_SIZE
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=stored.session_id,
                    cwd=str(stored.cwd),
                    title=stored.title,
                    updated_at=stored.updated_at,
                )
                for stored in page
            ],
            next_cursor=str(following) if following < len(sessions) else None,
        )

    async def _replay(self, session: ACPSession) -> None:
        """Sends the stored transcript as the updates a client would have seen."""
        conn = self._conn
        if conn is None:
            return
        for entry in list(session.stored.transcript):
            update = replayed(entry)
            try:
                await conn.session_update(session_id=session.id, update=update)
            except Exception:
                _log.debug("dropping a replayed update: the client is gone")
                return

    # -- modes and config -------------------------------------------------------------------

    def _mode_state(self, stored: StoredSession) -> SessionModeState:
        return SessionModeState(current_mode_id=stored.mode, available_modes=list(_MODES.values()))

    def _models(self, stored: StoredSession) -> list[str]:
        models = [self._endpoint.model, stored.model]
        if self._endpoint.base_url.rstrip("/") == DEFAULT_BASE_URL:
            models.extend(DEEPSEEK_MODELS)
        return list(dict.fromkeys(models))

    def _config_options(
        self, stored: StoredSession
    ) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        return [
            SessionConfigOptionSelect(
                type="select",
                id=MODE_OPTION_ID,
                name="Mode",
                category="mode",
                current_value=stored.mode,
                options=[
                    SessionConfigSelectOption(value=mode.id, name=mode.name)
                    for mode in _MODES.values()
                ],
            ),
            SessionConfigOptionSelect(
                type="select",
                id=MODEL_OPTION_ID,
                name="Model",
                category="model",
                current_value=stored.model,
                options=[
                    SessionConfigSelectOption(value=model, name=model)
                    for model in self._models(stored)
                ],
            ),
        ]

    async def _known(self, session_id: str) -> ACPSession:
        """An open session, or one reopened from the store (after eviction or a restart)."""
        session = self._sessions.get(session_id)
        if session is None:
            stored = await self._store.load(session_id)
            if stored is None:
                raise RequestError.invalid_params({"sessionId": "unknown session"})
            session = self._open(stored)
        else:
            # Most recently used last, so eviction takes the least recently used first.
            self._sessions[session_id] = self._sessions.pop(session_id)
        return session

    async def _notify(self, session: ACPSession, update: Any) -> None:
        conn = self._conn
        if conn is None:
            return
        try:
            await conn.session_update(session_id=session.id, update=update)
        except Exception:
            _log.debug("dropping a session/update: the client is gone")

    async def _set_mode(self, session: ACPSession, mode_id: str) -> None:
        if mode_id not in _MODES:
            raise RequestError.invalid_params({"modeId": "unknown mode"})
        session.stored.mode = "ask" if mode_id == "ask" else "execute"
        await session.conversation.save()
        await self._notify(session, update_current_mode(mode_id))

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        """ACP `session/set_mode`: `ask` or `execute`."""
        session = await self._known(session_id)
        await self._set_mode(session, mode_id)
        await self._notify(
            session,
            ConfigOptionUpdate(
                session_update="config_option_update",
                config_options=self._config_options(session.stored),
            ),
        )
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        """ACP `session/set_config_option`: the mode or the model."""
        session = await self._known(session_id)
        if config_id == MODE_OPTION_ID and isinstance(value, str):
            await self._set_mode(session, value)
        elif config_id == MODEL_OPTION_ID and isinstance(value, str):
            if value not in self._models(session.stored):
                raise RequestError.invalid_params({"value": "not a model this agent offers"})
            session.stored.model = value
            await session.conversation.save()
        else:
            raise RequestError.invalid_params({"configId": "unknown option or value type"})
        return SetSessionConfigOptionResponse(config_options=self._config_options(session.stored))

    # -- prompts ----------------------------------------------------------------------------

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """ACP `session/cancel`: fires the running turn's cancel signal."""
        session = self._sessions.get(session_id)
        if session is not None and session.cancel is not None:
            session.cancel.cancel()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        """ACP `session/prompt`: one turn of the session's conversation, updates sent first."""
        self._require_auth()
        session = await self._known(session_id)
        if session.cancel is not None:
            raise RequestError.invalid_request({"sessionId": "a prompt is already running"})
        if self._closing:
            raise TurnFailedError
        text = _prompt_text(prompt)
        cancel = CancelSignal()
        updates = Updates()
        session.cancel = cancel
        session.updates = updates
        self._running += 1
        if self._idle is None or self._idle.is_set():
            self._idle = anyio.Event()
        status: AgentStatus | None = None
        try:
            untitled = session.stored.title is None
            async with anyio.create_task_group() as tg:
                tg.start_soon(updates.pump, self._conn, session.id)
                try:
                    # A client's `_meta.traceparent`: this turn's delegations join its trace.
                    with continued_trace(kwargs.get("traceparent")):
                        status = await self._turn(session, text, cancel, updates)
                    if untitled and session.stored.title is not None:
                        # The first prompt names the session in the client's session list.
                        updates.put(
                            SessionInfoUpdate(
                                session_update="session_info_update",
                                title=session.stored.title,
                                updated_at=session.stored.updated_at,
                            )
                        )
                finally:
                    updates.close()
        finally:
            session.cancel = None
            session.updates = None
            self._running -= 1
            if self._running == 0:
                self._idle.set()
        stop_reason = _STOP_REASONS.get(status) if status is not None else None
        if stop_reason is None:
            raise TurnFailedError
        return PromptResponse(stop_reason=stop_reason)

    async def _turn(
        self, session: ACPSession, text: str, cancel: CancelSignal, updates: Updates
    ) -> AgentStatus | None:
        def observe(event: AgentEvent) -> None:
            update = update_for(session, event, ask_permission=self._ask_permission)
            if update is not None:
                updates.put(update)

        try:
            result = await session.conversation.run(
                text, cancel, observe, mcp_servers=session.mcp_servers
            )
        except Exception:
            _log.exception("the agent turn failed unexpectedly")
            return None
        if result.status == "failed":
            _log.warning("turn failed in session %s: %s", session.id, result.error)
        return result.status

    # -- shutdown ---------------------------------------------------------------------------

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
