"""What the CLI's stream says during a turn, as events, the turn's text and its usage.

Text arrives twice: as `stream_event` deltas (asked for with `--include-partial-messages`) and
again whole in the `assistant` message. The deltas are what a cancelled run keeps, so they are
the output; an `assistant` message whose id streamed no delta (a CLI without partials, or a
synthetic message) adds its text instead. Child text goes into events (untrusted, bounded by
the event buffer) and the bounded output; the only things read for facts are closed codes and
numbers.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

from subagent_core import (
    MessageChunk,
    SubagentEvent,
    ThoughtChunk,
    ToolCallEvent,
    ToolKind,
    Usage,
    UsageEvent,
)
from subagent_core.kit import BoundedText, safe_cost

from ._facts import tool_kind_of
from ._wire import Frame, as_list, as_object

MAX_TRACKED_IDS: Final = 1024
"""Message and tool-call ids remembered per turn (oldest forgotten first)."""


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class _Recent:
    """A bounded set of ids, with a value each."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, ToolKind] = OrderedDict()

    def add(self, key: str, value: ToolKind = "other") -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > MAX_TRACKED_IDS:
            self._items.popitem(last=False)

    def get(self, key: str) -> ToolKind | None:
        return self._items.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._items


class Transcript:
    """One turn's view of the stream."""

    def __init__(self, publish: Callable[[SubagentEvent], None], max_output_bytes: int) -> None:
        self._publish = publish
        self.output = BoundedText(max_output_bytes)
        self.last_error: object = None
        """The latest assistant `error` code (compared against closed sets only)."""
        self._streamed = _Recent()
        self._current: str | None = None
        self._tools = _Recent()

    def on_stream_event(self, frame: Frame) -> None:
        """A partial-message event: text and thinking deltas."""
        if frame.get("parent_tool_use_id") is not None:
            return  # a nested agent's stream: not this run's answer
        event = as_object(frame.get("event"))
        kind = event.get("type")
        if kind == "message_start":
            message_id = as_object(event.get("message")).get("id")
            self._current = message_id if isinstance(message_id, str) else None
            return
        if kind != "content_block_delta":
            return
        delta = as_object(event.get("delta"))
        if delta.get("type") == "text_delta":
            text = delta.get("text")
            if isinstance(text, str) and text:
                if self._current is not None:
                    self._streamed.add(self._current)
                self._text(text)
        elif delta.get("type") == "thinking_delta":
            text = delta.get("thinking")
            if isinstance(text, str) and text:
                if self._current is not None:
                    self._streamed.add(self._current)
                self._publish(ThoughtChunk(text=text))

    def on_assistant(self, frame: Frame) -> None:
        """A whole assistant message (or one block of it)."""
        error = frame.get("error")
        if error is not None:
            self.last_error = error
        if frame.get("parent_tool_use_id") is not None:
            return
        message = as_object(frame.get("message"))
        message_id = message.get("id")
        streamed = isinstance(message_id, str) and message_id in self._streamed
        for block in as_list(message.get("content")):
            item = as_object(block)
            kind = item.get("type")
            if kind == "text" and not streamed and error is None:
                text = item.get("text")
                if isinstance(text, str) and text:
                    self._text(text)
            elif kind == "thinking" and not streamed:
                text = item.get("thinking")
                if isinstance(text, str) and text:
                    self._publish(ThoughtChunk(text=text))
            elif kind == "tool_use":
                call_id = item.get("id")
                if isinstance(call_id, str):
                    tool = tool_kind_of(item.get("name"))
                    self._tools.add(call_id, tool)
                    name = item.get("name")
                    title = name if isinstance(name, str) else None
                    self._publish(
                        ToolCallEvent(call_id=call_id, kind=tool, status="pending", title=title)
                    )

    def on_user(self, frame: Frame) -> None:
        """Tool results the CLI sends back to the model."""
        message = as_object(frame.get("message"))
        for block in as_list(message.get("content")):
            item = as_object(block)
            if item.get("type") != "tool_result":
                continue
            call_id = item.get("tool_use_id")
            if not isinstance(call_id, str):
                continue
            status = "failed" if item.get("is_error") is True else "completed"
            self._publish(
                ToolCallEvent(call_id=call_id, kind=self._tools.get(call_id), status=status)
            )

    def _text(self, text: str) -> None:
        self._publish(MessageChunk(text=text))
        self.output.add(text)


def result_usage(result: Mapping[str, Any]) -> tuple[Usage | None, UsageEvent | None]:
    """`result.usage` token counts and `total_cost_usd` as `Cost(amount, "USD")`."""
    usage = as_object(result.get("usage"))
    input_tokens = _count(usage.get("input_tokens"))
    output_tokens = _count(usage.get("output_tokens"))
    cached = _count(usage.get("cache_read_input_tokens"))
    cost = safe_cost(result.get("total_cost_usd"), "USD")
    if input_tokens is None and output_tokens is None and cost is None:
        return None, None
    return (
        Usage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_input_tokens=cached,
            cost=cost,
        ),
        UsageEvent(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_input_tokens=cached,
            cost=cost,
        ),
    )
