"""What the CLI's stream says during a turn, as events, the turn's text and its usage.

Text arrives twice: as `stream_event` deltas (asked for with `--include-partial-messages`) and
again whole in the `assistant` message. The deltas are what a cancelled run keeps, so they are
the output; an `assistant` message whose id streamed no delta (a CLI without partials, or a
synthetic message) adds its text instead. Child text goes into events (untrusted, bounded by
the event buffer) and the bounded output; the only things read for facts are closed codes and
numbers.

Usage: a `result`'s `usage` counts that turn alone, but its `total_cost_usd` is the CLI's
running total for the conversation (restored by `--resume`), so `CostMeter` keeps each turn's
own part. While a turn runs, each model call's `message_start` / `message_delta` counts are
reported as the turn's running tokens, so a budget can stop a long turn before its `result`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

from subagent_core import (
    Cost,
    MessageChunk,
    SubagentEvent,
    ThoughtChunk,
    ToolCallEvent,
    ToolKind,
    Usage,
)
from subagent_core.kit import BoundedText, add_usage, safe_cost

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

    def __init__(
        self,
        publish: Callable[[SubagentEvent], None],
        max_output_bytes: int,
        on_usage: Callable[[Usage], None] | None = None,
    ) -> None:
        self._publish = publish
        self._on_usage = on_usage
        """Called with the turn's running token counts after each model call's report."""
        self.output = BoundedText(max_output_bytes)
        self.last_error: object = None
        """The latest assistant `error` code (compared against closed sets only)."""
        self._streamed = _Recent()
        self._current: str | None = None
        self._tools = _Recent()
        self._earlier: Usage | None = None
        """The tokens of this turn's finished model calls."""
        self._call: dict[str, int] = {}
        """The tokens of the model call streaming now, as its events last said."""

    def on_stream_event(self, frame: Frame) -> None:
        """A partial-message event: text and thinking deltas."""
        if frame.get("parent_tool_use_id") is not None:
            return  # a nested agent's stream: not this run's answer
        event = as_object(frame.get("event"))
        kind = event.get("type")
        if kind == "message_start":
            message = as_object(event.get("message"))
            message_id = message.get("id")
            self._current = message_id if isinstance(message_id, str) else None
            self._earlier = add_usage(self._earlier, _tokens(self._call))
            self._call = {}
            self._count_call(message.get("usage"))
            return
        if kind == "message_delta":
            self._count_call(event.get("usage"))
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

    def _count_call(self, usage: object) -> None:
        """A model call's counts so far (`message_delta` repeats them as they grow)."""
        counts = as_object(usage)
        changed = False
        for key in _TOKEN_KEYS:
            value = _count(counts.get(key))
            if value is not None:
                self._call[key] = value
                changed = True
        running = add_usage(self._earlier, _tokens(self._call))
        if changed and running is not None and self._on_usage is not None:
            self._on_usage(running)


_TOKEN_KEYS: Final = ("input_tokens", "output_tokens", "cache_read_input_tokens")


def _tokens(counts: Mapping[str, Any]) -> Usage | None:
    """The token counts of a `usage` object (unknown or invalid ones left out)."""
    input_tokens = _count(counts.get("input_tokens"))
    output_tokens = _count(counts.get("output_tokens"))
    cached = _count(counts.get("cache_read_input_tokens"))
    if input_tokens is None and output_tokens is None and cached is None:
        return None
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens, cached_input_tokens=cached)


class CostMeter:
    """Each `result`'s own usage out of the CLI's running cost, for one child process.

    `total_cost_usd` grows over the conversation, every turn of the process and (after
    `--resume`) the earlier processes' turns too; a turn's own cost is what the total added
    since the previous `result` read. A turn that settles before its `result` (a cancel, the
    budget, an authentication failure) reports the tokens it saw stream; its late `result`
    arrives during the next turn, and the cost it adds is held and counted with that turn, so
    the session's cost still adds up to the CLI's total (which a resume restores).
    """

    def __init__(self, spent: float = 0.0) -> None:
        self._seen = spent
        """The running total as last read (on a resume: what the session had spent)."""
        self.held: Usage | None = None
        """The cost interrupted turns' late `result`s added, not counted yet."""

    def own(self, result: Mapping[str, Any]) -> Usage | None:
        """A `result`'s own usage: its tokens and its part of the running cost."""
        tokens = _tokens(as_object(result.get("usage")))
        total = safe_cost(result.get("total_cost_usd"), "USD")
        if total is None:
            return tokens
        # A total below the one seen: the CLI restored less than was spent (a killed child).
        cost = Cost(max(0.0, total.amount - self._seen), "USD")
        self._seen = total.amount
        return add_usage(tokens, Usage(cost=cost))

    def hold(self, result: Mapping[str, Any]) -> None:
        """An interrupted turn's late `result`: its cost waits for the turn that reads it."""
        own = self.own(result)
        if own is not None and own.cost is not None:
            self.held = add_usage(self.held, Usage(cost=own.cost))

    def counted(self) -> None:
        """A turn settled before its `result`, its usage including what was held."""
        self.held = None

    def settle(self, result: Mapping[str, Any]) -> Usage | None:
        """The usage of the turn `result` ends, with whatever was held for it."""
        usage = add_usage(self.held, self.own(result))
        self.held = None
        return usage
