"""`harness acp-agent`: the direct-model agent behind the official `acp` SDK, on stdio.

This module (with `_agent_server_updates` and `_agent_server_mcp`) is where the asyncio-only
`acp` SDK serves; `import acp` happens only when the command runs. A session
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
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.abc
from acp import PROTOCOL_VERSION, RequestError
from acp.core import AgentSideConnection
from acp.helpers import (
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_current_mode,
    update_user_message_text,
)
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
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
    PermissionOption,
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
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)
from model_agent import (
    AgentEvent,
    AgentStatus,
    ChildEnded,
    ChildEvent,
    ChildStarted,
    MCPServer,
    ReasoningDelta,
    TextDelta,
    ToolEnded,
    ToolStarted,
)
from subagent_core import CancelSignal
from subagent_core.kit import open_stdio_streams

from ._agent_server_mcp import mcp_servers_from_acp
from ._agent_server_stdio import stdin_lines
from ._agent_server_tools import (
    ASKS_APPROVAL,
    MAX_OUTPUT_BYTES,
    ChildActivity,
    ToolView,
    cut,
    describe,
)
from ._agent_server_updates import Update, Updates
from ._config import API_KEY_ENV, DEFAULT_BASE_URL, DEFAULT_MODEL
from ._conversation import Conversation
from ._endpoint import ResolvedEndpoint
from ._session_store import SessionMode as ModeId
from ._session_store import SessionStore, StoredSession, TranscriptEntry
from ._version import VERSION

_log = logging.getLogger("harness.acp_agent")

SHUTDOWN_GRACE_SECONDS = 15.0
"""How long EOF/SIGTERM waits for cancelled turns to clean up their commands and children."""
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
_ALLOW_OPTION = "allow-once"
_REJECT_OPTION = "reject-once"


class TurnFailedError(RequestError):
    """A failed turn: JSON-RPC -32603 `Internal error` with no `data` (model text is not safe)."""

    def __init__(self) -> None:
        super().__init__(-32603, "Internal error")

    def to_error_obj(self) -> dict[str, Any]:
        return {"code": self.code, "message": "Internal error"}


@dataclass(slots=True)
class _Session:
    conversation: Conversation
    cancel: CancelSignal | None = None
    """The running turn's signal; None while idle."""
    updates: Updates | None = None
    """The running turn's outgoing updates."""
    last_call: dict[str, str] = field(default_factory=dict[str, str])
    """Tool name → id of its latest started call, so a permission request names the call."""
    views: dict[str, ToolView] = field(default_factory=dict[str, ToolView])
    children: dict[str, tuple[str, ChildActivity]] = field(
        default_factory=dict[str, tuple[str, ChildActivity]]
    )
    """Running delegated children by child id: (the delegate call's id, what it does)."""
    finished_children: dict[str, ChildActivity] = field(default_factory=dict[str, ChildActivity])
    child_calls: dict[str, bool] = field(default_factory=dict[str, bool])
    """A running child's tool calls by id: whether the client was shown it (to approve it)."""
    """Ended children by delegate call id, until that call's own end is shown."""
    mcp_servers: tuple[MCPServer, ...] = ()
    """The client's MCP servers for this session (from new/load/resume; never stored)."""

    @property
    def id(self) -> str:
        return self.conversation.session_id

    @property
    def stored(self) -> StoredSession:
        return self.conversation.stored


def _locations(view: ToolView) -> list[ToolCallLocation] | None:
    return [ToolCallLocation(path=path) for path in view.paths] or None


def _diff_content(view: ToolView) -> list[Any] | None:
    if view.diff is None:
        return None
    diff = view.diff
    return [tool_diff_content(diff.path, diff.new_text, diff.old_text)]


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
        self._endpoint = endpoint
        self._mode: ModeId = mode
        self._ask_permission = ask_permission
        self._max_steps = max_steps
        self._store = store
        self._conn: AgentSideConnection | None = None
        self._sessions: dict[str, _Session] = {}
        self._running = 0
        self._idle: anyio.Event | None = None
        self._closing = False

    def on_connect(self, conn: AgentSideConnection) -> None:
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

    def _open(self, stored: StoredSession) -> _Session:
        session_holder: list[_Session] = []

        async def approve(tool_name: str, arguments: Mapping[str, Any]) -> bool:
            return await self._approve(session_holder[0], tool_name, arguments)

        conversation = Conversation(
            stored,
            store=self._store,
            endpoint=self._endpoint,
            max_steps=self._max_steps,
            approve=approve if self._ask_permission else None,
        )
        session = _Session(conversation=conversation)
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

    async def _find(self, session_id: str, cwd: str, mcp_servers: object) -> _Session:
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
        session = await self._find(session_id, cwd, mcp_servers)
        return ResumeSessionResponse(
            modes=self._mode_state(session.stored),
            config_options=self._config_options(session.stored),
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
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

    async def _replay(self, session: _Session) -> None:
        """Sends the stored transcript as the updates a client would have seen."""
        conn = self._conn
        if conn is None:
            return
        for entry in list(session.stored.transcript):
            update = _replayed(entry)
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

    async def _known(self, session_id: str) -> _Session:
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

    async def _notify(self, session: _Session, update: Any) -> None:
        conn = self._conn
        if conn is None:
            return
        try:
            await conn.session_update(session_id=session.id, update=update)
        except Exception:
            _log.debug("dropping a session/update: the client is gone")

    async def _set_mode(self, session: _Session, mode_id: str) -> None:
        if mode_id not in _MODES:
            raise RequestError.invalid_params({"modeId": "unknown mode"})
        session.stored.mode = "ask" if mode_id == "ask" else "execute"
        await session.conversation.save()
        await self._notify(session, update_current_mode(mode_id))

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
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
        session = self._sessions.get(session_id)
        if session is not None and session.cancel is not None:
            session.cancel.cancel()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
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
        self, session: _Session, text: str, cancel: CancelSignal, updates: Updates
    ) -> AgentStatus | None:
        def observe(event: AgentEvent) -> None:
            update = self._update_for(session, event)
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

    def _asks_approval(self, session: _Session, name: str) -> bool:
        return self._ask_permission and session.stored.mode == "execute" and name in ASKS_APPROVAL

    def _update_for(self, session: _Session, event: AgentEvent) -> Update | None:
        if isinstance(event, TextDelta):
            return update_agent_message_text(event.text) if event.text else None
        if isinstance(event, ReasoningDelta):
            return update_agent_thought_text(event.text) if event.text else None
        if isinstance(event, ToolStarted):
            view = describe(event.name, event.arguments, session.stored.cwd)
            session.views[event.call_id] = view
            session.last_call[event.name] = event.call_id
            pending = self._asks_approval(session, event.name)
            return ToolCallStart(
                session_update="tool_call",
                tool_call_id=event.call_id,
                title=view.title,
                kind=view.kind,
                status="pending" if pending else "in_progress",
                content=_diff_content(view),
                locations=_locations(view),
                raw_input=view.arguments,
            )
        if isinstance(event, ToolEnded):
            view = session.views.pop(event.call_id, None)
            output = cut(event.content, MAX_OUTPUT_BYTES)
            content: list[Any] | None = [tool_content(text_block(output))] if output else None
            if view is not None and view.diff is not None and not event.is_error:
                content = None  # the diff shown at the start stays the call's content
            child = session.finished_children.pop(event.call_id, None)
            if child is not None:
                # The child's own tool calls stay listed above its answer.
                content = [
                    tool_content(text_block(child.render(with_text=False))),
                    *(content or []),
                ]
            return ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=event.call_id,
                status="failed" if event.is_error else "completed",
                content=content,
            )
        return self._child_update(session, event)

    def _child_update(self, session: _Session, event: AgentEvent) -> Update | None:
        """A delegated child's activity as an update of its `subagent_delegate` call."""
        if isinstance(event, ChildStarted):
            call_id = session.last_call.get("subagent_delegate")
            if call_id is None:
                return None
            activity = ChildActivity(event.description)
            session.children[event.child_id] = (call_id, activity)
            return _activity_update(call_id, activity)
        if isinstance(event, ChildEnded):
            found = session.children.pop(event.child_id, None)
            if found is None:
                return None
            session.finished_children[found[0]] = found[1]
            return _activity_update(*found)
        if not isinstance(event, ChildEvent) or event.child_id not in session.children:
            return None
        call_id, activity = session.children[event.child_id]
        inner = event.event
        if isinstance(inner, TextDelta):
            activity.add_text(inner.text)
        elif isinstance(inner, ToolStarted):
            view = describe(inner.name, inner.arguments, session.stored.cwd)
            activity.tool(inner.call_id, view.title, "in_progress")
            # Known by id, so a child action asked about is shown as its own tool call.
            session.last_call[inner.name] = inner.call_id
            session.views[inner.call_id] = view
            session.child_calls[inner.call_id] = False
        elif isinstance(inner, ToolEnded):
            title = (activity.tools or {}).get(inner.call_id, (inner.name, ""))[0]
            status = "failed" if inner.is_error else "completed"
            activity.tool(inner.call_id, title, status)
            session.views.pop(inner.call_id, None)
            if session.child_calls.pop(inner.call_id, False) and session.updates is not None:
                session.updates.put(
                    ToolCallProgress(
                        session_update="tool_call_update",
                        tool_call_id=inner.call_id,
                        status=status,
                        content=[tool_content(text_block(cut(inner.content, MAX_OUTPUT_BYTES)))]
                        if inner.content
                        else None,
                    )
                )
        else:
            return None
        return _activity_update(call_id, activity)

    async def _approve(
        self, session: _Session, tool_name: str, arguments: Mapping[str, Any]
    ) -> bool:
        """Asks the client; Ask mode refuses whatever it is asked (the agent re-checks too)."""
        conn = self._conn
        cancel = session.cancel
        updates = session.updates
        if conn is None or cancel is None or cancel.cancelled or session.stored.mode != "execute":
            return False
        call_id = session.last_call.get(tool_name) or f"call_{uuid.uuid4().hex}"
        view = session.views.get(call_id) or describe(
            tool_name, json.dumps(dict(arguments)), session.stored.cwd
        )
        if updates is not None:
            if session.child_calls.get(call_id) is False:
                # A delegated child's action: shown as a tool call of its own to be approved.
                session.child_calls[call_id] = True
                updates.put(
                    ToolCallStart(
                        session_update="tool_call",
                        tool_call_id=call_id,
                        title=view.title,
                        kind=view.kind,
                        status="pending",
                        content=_diff_content(view),
                        locations=_locations(view),
                        raw_input=view.arguments,
                    )
                )
            await updates.flush()  # the client sees the call before the question about it
        allowed = False
        with cancel.cancel_scope():
            try:
                response = await conn.request_permission(
                    session_id=session.id,
                    tool_call=ToolCallUpdate(
                        tool_call_id=call_id,
                        title=view.title,
                        kind=view.kind,
                        status="pending",
                        locations=_locations(view),
                        raw_input=view.arguments,
                    ),
                    options=[
                        PermissionOption(option_id=_ALLOW_OPTION, name="Allow", kind="allow_once"),
                        PermissionOption(
                            option_id=_REJECT_OPTION, name="Reject", kind="reject_once"
                        ),
                    ],
                )
            except Exception:
                _log.debug("the permission request failed; treating it as a refusal")
            else:
                outcome = response.outcome
                allowed = isinstance(outcome, AllowedOutcome) and outcome.option_id == _ALLOW_OPTION
        allowed = allowed and not cancel.cancelled and session.stored.mode == "execute"
        if allowed and updates is not None:
            updates.put(
                ToolCallProgress(
                    session_update="tool_call_update", tool_call_id=call_id, status="in_progress"
                )
            )
        return allowed

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


def _activity_update(call_id: str, activity: ChildActivity) -> ToolCallProgress:
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        content=[tool_content(text_block(activity.render()))],
    )


def _replayed(entry: TranscriptEntry) -> Any:
    if entry.role == "user":
        return update_user_message_text(entry.text)
    if entry.role == "agent":
        return update_agent_message_text(entry.text)
    if entry.role == "thought":
        return update_agent_thought_text(entry.text)
    status = entry.status if entry.status in ("completed", "failed") else "completed"
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=entry.call_id or f"call_{uuid.uuid4().hex}",
        title=entry.title or "tool",
        kind=cast(Any, entry.kind) if entry.kind else "other",
        status=status,
        content=[tool_content(text_block(entry.text))] if entry.text else None,
        locations=[ToolCallLocation(path=path) for path in entry.paths] or None,
    )


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
    """The SDK's message-level `Transport` over our stdin/stdout (bounded input lines).

    It counts the client's requests that have no response yet, so that at stdin EOF (a client
    that wrote its requests and closed its end) every request read is still answered before
    the connection closes.
    """

    def __init__(
        self, receive: anyio.abc.ByteReceiveStream, send: anyio.abc.ByteSendStream
    ) -> None:
        self._lines = stdin_lines(receive)
        self._send = send
        self._unanswered = 0
        self._answered = anyio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        try:
            await self._send.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            _log.debug("dropping an outgoing message: stdout is gone")
        finally:
            if "id" in message and "method" not in message and self._unanswered > 0:
                self._unanswered -= 1
                self._answered.set()

    async def receive(self) -> dict[str, Any] | None:
        async for line in self._lines:
            try:
                message = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                _log.warning("ignoring an input line that is not JSON")
                continue
            if isinstance(message, dict):
                if "id" in message and "method" in message:
                    self._unanswered += 1
                return cast(dict[str, Any], message)
        return None

    async def wait_answered(self) -> None:
        """Returns once every request read so far has had its response sent."""
        while self._unanswered > 0:
            self._answered = anyio.Event()
            await self._answered.wait()

    async def close(self) -> None:
        """stdin and stdout belong to `open_stdio_streams`, which restores them on exit."""


async def _serve(agent: HarnessACPAgent) -> None:
    async with open_stdio_streams() as (receive, send):
        transport = _StdioTransport(receive, send)
        conn = AgentSideConnection(
            cast(Any, agent),
            transport,
            listening=False,
            use_unstable_protocol=True,
        )
        async with anyio.create_task_group() as tg:

            async def listen() -> None:
                await conn.listen()
                tg.cancel_scope.cancel()

            tg.start_soon(listen)
            tg.start_soon(_watch_signals, agent, tg.cancel_scope)
        agent.cancel_all()
        with anyio.move_on_after(SHUTDOWN_GRACE_SECONDS, shield=True):
            await agent.wait_idle()
            # Requests read before EOF are answered (cancelled turns answer `cancelled`).
            await transport.wait_answered()
        with anyio.move_on_after(2.0, shield=True):
            await conn.close()


def serve_acp(
    *,
    endpoint: ResolvedEndpoint,
    mode: ModeId,
    ask_permission: bool,
    max_steps: int,
    state_dir: Path,
) -> int:
    """Serves until stdin EOF, SIGTERM or SIGINT; returns the exit code (0)."""
    agent = HarnessACPAgent(
        endpoint=endpoint,
        mode=mode,
        ask_permission=ask_permission,
        max_steps=max_steps,
        store=SessionStore(state_dir, "acp"),
    )
    anyio.run(_serve, agent, backend="asyncio")
    return 0
