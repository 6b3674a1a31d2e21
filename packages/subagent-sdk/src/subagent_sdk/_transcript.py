"""What one owned run collects: from the prompt's receipt until its root session is idle."""

from __future__ import annotations

from ._errors import SDKProtocolError
from ._framing import Notification
from ._output import DEFAULT_MAX_OUTPUT_BYTES, OutputAccumulator, bound_output
from ._wire import (
    EVENT_ASSISTANT_CHUNK,
    EVENT_ASSISTANT_MESSAGE,
    EVENT_INBOX_SPLICED,
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
    `turn/start` opens another turn, and the output never exceeds `max_output_bytes`.

    With `sole_prompt=True` (a session that only this run prompts) a root receipt event that
    does not carry this prompt's `messageId` is a protocol error instead of a wait that could
    never end.
    """

    def __init__(
        self,
        session_id: str,
        *,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        sole_prompt: bool = False,
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
        self._deltas = OutputAccumulator(max_output_bytes)
        self._last_message: str | None = None
        self._in_turn = True

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
        if self.message_id in SessionEvent.parse(notification.params).inserted_ids():
            self.receipt_seen = True
        elif self._sole_prompt:
            raise SDKProtocolError("malformed SDK prompt receipt")

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
            text = event.chunk_text()
            if text is not None:
                self._deltas.add(text)
        elif event.type == EVENT_ASSISTANT_MESSAGE:
            text = event.message_text()
            if text:
                self._last_message = bound_output(text, self._max_output_bytes)
