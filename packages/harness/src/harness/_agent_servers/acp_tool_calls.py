"""How the agent's activity shows in an ACP client: tool calls, a child's activity, approvals.

The agent emits typed events (`model_agent.AgentEvent`); this module turns each into the
`session/update` an editor expects — commands as `execute` with their bounded output, file
changes as `edit` with a diff, reads as `read`, and a delegated child as one `subagent_delegate`
call whose content shows the child's own activity — and asks the client before an action
(`session/request_permission`), showing a child's action as a tool call of its own first.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from acp.core import AgentSideConnection
from acp.helpers import (
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_user_message_text,
)
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)
from model_agent import (
    AgentEvent,
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

from .acp_updates import Update, Updates
from .conversation import Conversation
from .conversation_store import StoredSession, TranscriptEntry
from .tool_views import (
    ASKS_APPROVAL,
    MAX_OUTPUT_BYTES,
    ChildActivity,
    ToolView,
    cut,
    describe,
)

_log = logging.getLogger("harness.acp_agent")

_ALLOW_OPTION = "allow-once"
_REJECT_OPTION = "reject-once"


@dataclass(slots=True)
class ACPSession:
    """One open session: its conversation and the running turn's tool-call state."""

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
        """The session id (the conversation's)."""
        return self.conversation.session_id

    @property
    def stored(self) -> StoredSession:
        """The stored session record."""
        return self.conversation.stored


def locations(view: ToolView) -> list[ToolCallLocation] | None:
    """The paths a tool call touches, as ACP locations."""
    return [ToolCallLocation(path=path) for path in view.paths] or None


def diff_content(view: ToolView) -> list[Any] | None:
    """An edit's diff as ACP tool-call content."""
    if view.diff is None:
        return None
    diff = view.diff
    return [tool_diff_content(diff.path, diff.new_text, diff.old_text)]


def update_for(session: ACPSession, event: AgentEvent, *, ask_permission: bool) -> Update | None:
    """The `session/update` an agent event becomes, or `None` when it shows nothing."""
    if isinstance(event, TextDelta):
        return update_agent_message_text(event.text) if event.text else None
    if isinstance(event, ReasoningDelta):
        return update_agent_thought_text(event.text) if event.text else None
    if isinstance(event, ToolStarted):
        view = describe(event.name, event.arguments, session.stored.cwd)
        session.views[event.call_id] = view
        session.last_call[event.name] = event.call_id
        pending = (
            ask_permission and session.stored.mode == "execute" and event.name in ASKS_APPROVAL
        )
        return ToolCallStart(
            session_update="tool_call",
            tool_call_id=event.call_id,
            title=view.title,
            kind=view.kind,
            status="pending" if pending else "in_progress",
            content=diff_content(view),
            locations=locations(view),
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
    return child_update(session, event)


def child_update(session: ACPSession, event: AgentEvent) -> Update | None:
    """A delegated child's activity as an update of its `subagent_delegate` call."""
    if isinstance(event, ChildStarted):
        call_id = session.last_call.get("subagent_delegate")
        if call_id is None:
            return None
        activity = ChildActivity(event.description)
        session.children[event.child_id] = (call_id, activity)
        return activity_update(call_id, activity)
    if isinstance(event, ChildEnded):
        found = session.children.pop(event.child_id, None)
        if found is None:
            return None
        session.finished_children[found[0]] = found[1]
        return activity_update(*found)
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
    return activity_update(call_id, activity)


async def ask_client(
    conn: AgentSideConnection | None,
    session: ACPSession,
    tool_name: str,
    arguments: Mapping[str, Any],
) -> bool:
    """Asks the client; Ask mode refuses whatever it is asked (the agent re-checks too)."""
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
                    content=diff_content(view),
                    locations=locations(view),
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
                    locations=locations(view),
                    raw_input=view.arguments,
                ),
                options=[
                    PermissionOption(option_id=_ALLOW_OPTION, name="Allow", kind="allow_once"),
                    PermissionOption(option_id=_REJECT_OPTION, name="Reject", kind="reject_once"),
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


def activity_update(call_id: str, activity: ChildActivity) -> ToolCallProgress:
    """The delegate call's content: what its child has done so far."""
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        content=[tool_content(text_block(activity.render()))],
    )


def replayed(entry: TranscriptEntry) -> Any:
    """A stored transcript entry as the update a client would have seen."""
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
