"""One session's conversation: its stored state and the agent turns that extend it.

Both servers (`acp-agent`, `sdk-runtime`) keep one `Conversation` per session. Each turn runs
the direct-model agent with the session's history, mode, model and cwd, then stores the
history the turn produced (the agent bounds it, summarising older turns when it would
overflow the model's context) so the next prompt — in this process or a restarted one —
continues it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from model_agent import (
    Agent,
    AgentEvent,
    AgentObserver,
    AgentResult,
    ApprovalCallback,
    MCPServer,
    ReasoningDelta,
    TextDelta,
    ToolEnded,
    ToolStarted,
)
from subagent_core import CancelSignal

from harness._config.endpoint import ResolvedEndpoint
from harness._registry.model_agent_config import agent_config

from .conversation_store import SessionStore, StoredSession, TranscriptEntry
from .tool_views import MAX_OUTPUT_BYTES, cut, describe

_log = logging.getLogger("harness.sessions")


class Conversation:
    """A session's conversation; turns are sequential (the servers queue or refuse overlap)."""

    def __init__(
        self,
        stored: StoredSession,
        *,
        store: SessionStore,
        endpoint: ResolvedEndpoint,
        max_steps: int,
        approve: ApprovalCallback | None = None,
    ) -> None:
        """A conversation over `stored`, saved to `store` after each turn."""
        self.stored = stored
        self._store = store
        self._endpoint = endpoint
        self._max_steps = max_steps
        self._approve = approve

    @property
    def session_id(self) -> str:
        """The session id this conversation belongs to."""
        return self.stored.session_id

    def set_endpoint(self, endpoint: ResolvedEndpoint) -> None:
        """Uses `endpoint` (e.g. once a key became available) from the next turn on."""
        self._endpoint = endpoint

    async def save(self) -> None:
        """Writes the session record to the store."""
        await self._store.save(self.stored)

    async def run(
        self,
        prompt: str,
        cancel: CancelSignal,
        observer: AgentObserver | None = None,
        *,
        mcp_servers: Sequence[MCPServer] = (),
    ) -> AgentResult:
        """One agent turn on `prompt`, continuing the stored history; stores the result.

        `mcp_servers` are the client's servers for this turn (connected for the turn only).
        """
        stored = self.stored
        endpoint = dataclasses.replace(self._endpoint, model=stored.model)
        config = agent_config(
            endpoint,
            workspace=stored.cwd,
            mode=stored.mode,
            max_steps=self._max_steps,
            approve=self._approve,
        )
        if mcp_servers:
            config = dataclasses.replace(config, mcp_servers=tuple(mcp_servers))
        if self._approve is not None:
            # The host that approves the delegation also approves each action of the child.
            config = dataclasses.replace(config, approve_child_actions=True)
        agent = Agent(config, observer=self._recorder(observer))
        stored.add(TranscriptEntry(role="user", text=prompt))
        result = await agent.run(prompt, cancel, history=stored.history)
        stored.history = list(result.history)
        await self.save()
        return result

    def _recorder(self, observer: AgentObserver | None) -> AgentObserver:
        """Records the turn into the replayable transcript, then passes each event on."""
        stored = self.stored
        started: dict[str, ToolStarted] = {}

        def record(event: AgentEvent) -> None:
            if isinstance(event, TextDelta) and event.text:
                stored.add(TranscriptEntry(role="agent", text=event.text))
            elif isinstance(event, ReasoningDelta) and event.text:
                stored.add(TranscriptEntry(role="thought", text=event.text))
            elif isinstance(event, ToolStarted):
                started[event.call_id] = event
            elif isinstance(event, ToolEnded):
                start = started.pop(event.call_id, None)
                view = describe(event.name, start.arguments if start else "", stored.cwd)
                stored.add(
                    TranscriptEntry(
                        role="tool",
                        text=cut(event.content, MAX_OUTPUT_BYTES),
                        call_id=event.call_id,
                        title=view.title,
                        kind=view.kind,
                        status="failed" if event.is_error else "completed",
                        paths=view.paths,
                    )
                )
            if observer is not None:
                observer(event)

        return record
