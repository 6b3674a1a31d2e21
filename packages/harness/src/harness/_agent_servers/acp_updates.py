"""A turn's outgoing `session/update` notifications, in order, for `harness acp-agent`."""

from __future__ import annotations

import logging
from collections import deque
from typing import cast

import anyio
from acp.core import AgentSideConnection
from acp.helpers import update_agent_message_text, update_agent_thought_text
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    SessionInfoUpdate,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

_log = logging.getLogger("harness.acp_agent")

Update = (
    AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress | SessionInfoUpdate
)
"""What a turn sends while it runs."""


class Updates:
    """A turn's outgoing updates, in order; what waits for the client merges.

    The agent publishes synchronously and never waits on the client. While updates wait,
    consecutive text chunks join and consecutive updates of one tool call fold into one, so
    what waits is bounded by the turn's own text and tool calls, not by how often it streamed.
    """

    def __init__(self) -> None:
        """An empty queue for one turn."""
        self._items: deque[Update] = deque()
        self._ready = anyio.Event()
        self._drained = anyio.Event()
        self._drained.set()
        self._closed = False

    def put(self, update: Update) -> None:
        """Queues an update without waiting (merging into what already waits)."""
        last = self._items[-1] if self._items else None
        if (
            isinstance(update, AgentMessageChunk | AgentThoughtChunk)
            and type(last) is type(update)
            and isinstance(update.content, TextContentBlock)
            and isinstance(cast(AgentMessageChunk, last).content, TextContentBlock)
        ):
            previous = cast(TextContentBlock, cast(AgentMessageChunk, last).content)
            merged = previous.text + update.content.text
            self._items[-1] = (
                update_agent_message_text(merged)
                if isinstance(update, AgentMessageChunk)
                else update_agent_thought_text(merged)
            )
        elif (
            isinstance(update, ToolCallProgress)
            and isinstance(last, ToolCallProgress)
            and last.tool_call_id == update.tool_call_id
        ):
            changes = {
                name: value
                for name in ToolCallProgress.model_fields
                if (value := getattr(update, name)) is not None
            }
            self._items[-1] = last.model_copy(update=changes)
        else:
            self._items.append(update)
        if self._drained.is_set():
            self._drained = anyio.Event()
        self._ready.set()

    def close(self) -> None:
        """No more updates: the pump sends what waits and ends."""
        self._closed = True
        self._ready.set()

    async def flush(self) -> None:
        """Returns once everything put so far was sent (or dropped)."""
        await self._drained.wait()

    async def pump(self, conn: AgentSideConnection | None, session_id: str) -> None:
        """Sends updates until closed and empty; a dead client only drops them."""
        while True:
            while self._items:
                update = self._items.popleft()
                if conn is not None:
                    try:
                        await conn.session_update(session_id=session_id, update=update)
                    except Exception:
                        _log.debug("dropping a session/update: the client is gone")
            self._drained.set()
            if self._closed:
                return
            self._ready = anyio.Event()
            if self._items:
                continue
            await self._ready.wait()
