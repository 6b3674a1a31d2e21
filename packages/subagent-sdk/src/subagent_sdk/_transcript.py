"""What one owned run collects: from the prompt's receipt until its root session is idle.

The same attribution decides the run's live events: only the root session's activity inside a
turn after the receipt becomes `subagent_core` events (text deltas → `MessageChunk`, reasoning
deltas → `ThoughtChunk`, `tool/call` / `tool/result` → `ToolCallEvent`; a final message whose
text was not streamed → one `MessageChunk`). Publishing never waits and never changes the result.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from subagent_core import MessageChunk, SubagentEvent, ThoughtChunk, ToolCallEvent
from subagent_core.kit import DEFAULT_MAX_OUTPUT_BYTES, BoundedText

from ._errors import SDKProtocolError
from ._framing import Notification
from ._wire import (
    EVENT_ASSISTANT_CHUNK,
    EVENT_ASSISTANT_MESSAGE,
    EVENT_INBOX_SPLICED,
    EVENT_TOOL_CALL,
    EVENT_TOOL_RESULT,
    EVENT_TURN_END,
    EVENT_TURN_START,
    SESSION_EVENT,
    SESSION_STATUS,
    SessionEvent,
    SessionStatus,
    TurnEnd,
)


class RunTranscript:
    """The state of an owned run, readable at any moment (also after a failure).

    Everything before the receipt (the `agent/inbox/spliced` event carrying the prompt's
    `messageId`) is ignored, so text streamed for an earlier prompt is never attributed to
    this one. Child sessions' events are in scope but only the root session's text, turn end
    and idle status count. Text after a root `turn/end` is not output unless a new root
    `turn/start` opens another turn, and the output keeps at most `max_output_bytes` (then
    `subagent_core.kit.OUTPUT_TRUNCATION_MARKER`).

    With `sole_prompt=True` (a session that only this run prompts) a root receipt event that
    does not carry this prompt's `messageId` is a protocol error instead of a wait that could
    never end; `earlier_ids` names this session's earlier prompts whose receipts may still come
    (a turn given up before its receipt: the wire has no cancel), and those are passed over.
    `on_event` receives the run's activity as `subagent_core` events; it must not
    block (an `EventBuffer.publish`).
    """

    def __init__(
        self,
        session_id: str,
        *,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        sole_prompt: bool = False,
        on_event: Callable[[SubagentEvent], None] | None = None,
        earlier_ids: Collection[str] = (),
    ) -> None:
        self.session_id = session_id
        """The root session this run prompted."""
        self.message_id: str | None = None
        """The prompt's receipt id, once `session/prompt` answered."""
        self.receipt_seen = False
        """True once the receipt event arrived; collection starts there."""
        self.finished = False
        """True once the root session went idle after the receipt."""
        self.turn_end: TurnEnd | None = None
        """The last root `turn/end` after the receipt, or `None` if there was none."""
        self._max_output_bytes = max_output_bytes
        self._sole_prompt = sole_prompt
        self._earlier_ids = frozenset(earlier_ids)
        self._deltas = BoundedText(max_output_bytes)
        self._last_message: str | None = None
        self._in_turn = True
        self._on_event = on_event
        self._streamed = False

    @property
    def delta_text(self) -> str:
        """Root `text-delta` texts after the receipt, concatenated (bounded)."""
        return self._deltas.text

    @property
    def last_message(self) -> str | None:
        """Text of the last non-empty root `assistant/message` after the receipt (bounded)."""
        return self._last_message

    @property
    def output(self) -> str:
        """The last non-empty message, else the concatenated deltas, else empty."""
        if self._last_message is not None:
            return self._last_message
        return self._deltas.text

    def feed(self, notification: Notification) -> None:
        """Takes one in-scope notification; call only after `message_id` is set.

        Raises:
            SDKProtocolError: a malformed root event, message or status after the receipt, or
                (with `sole_prompt`) a receipt event for another message.
        """
        method = notification.method
        if not self.receipt_seen:
            self._look_for_receipt(notification)
            return
        root = notification.params.get("sessionId") == self.session_id
        if method == SESSION_EVENT and root:
            self._take_event(SessionEvent.parse(notification.params))
        elif method == SESSION_STATUS and root:
            self.finished = SessionStatus.parse(notification.params).status == "idle"

    def _look_for_receipt(self, notification: Notification) -> None:
        if notification.method != SESSION_EVENT:
            return
        if notification.params.get("sessionId") != self.session_id:
            return
        event = notification.params.get("event")
        if not isinstance(event, dict) or event.get("type") != EVENT_INBOX_SPLICED:
            return
        inserted = SessionEvent.parse(notification.params).inserted_ids()
        if self.message_id in inserted:
            self.receipt_seen = True
        elif self._sole_prompt and not (inserted and self._earlier_ids.issuperset(inserted)):
            raise SDKProtocolError("malformed SDK prompt receipt")

    def _publish(self, event: SubagentEvent) -> None:
        if self._on_event is not None:
            self._on_event(event)

    def _take_event(self, event: SessionEvent) -> None:
        if event.type == EVENT_TURN_START:
            self._in_turn = True
        elif event.type == EVENT_TURN_END:
            self.turn_end = event.turn_end()
            self._in_turn = False
        elif not self._in_turn:
            # After the turn end nothing is output (nor read), until a new turn starts.
            return
        elif event.type == EVENT_ASSISTANT_CHUNK:
            self._take_chunk(event)
        elif event.type == EVENT_ASSISTANT_MESSAGE:
            text = event.message_text()
            if text:
                message = BoundedText(self._max_output_bytes)
                message.add(text)
                self._last_message = message.text
                if not self._streamed:
                    self._publish(MessageChunk(text=text))
            self._streamed = False
        elif event.type in (EVENT_TOOL_CALL, EVENT_TOOL_RESULT):
            self._take_tool(event)

    def _take_chunk(self, event: SessionEvent) -> None:
        kind, text = event.chunk()
        if text is None:
            return
        if kind == "text-delta":
            # Events carry what the output kept: nothing past its bound.
            kept = self._deltas.add(text)
            self._streamed = True
            if kept:
                self._publish(MessageChunk(text=kept))
        elif kind == "reasoning-delta":
            self._publish(ThoughtChunk(text=text))

    def _take_tool(self, event: SessionEvent) -> None:
        # Tool events only feed the live view, so a malformed one is skipped, never fatal.
        call_id = event.data.get("callId")
        if not isinstance(call_id, str):
            return
        if event.type == EVENT_TOOL_CALL:
            name = event.data.get("name")
            title = name if isinstance(name, str) else None
            self._publish(ToolCallEvent(call_id=call_id, status="in_progress", title=title))
        else:
            failed = event.data.get("isError") is True
            self._publish(
                ToolCallEvent(call_id=call_id, status="failed" if failed else "completed")
            )
