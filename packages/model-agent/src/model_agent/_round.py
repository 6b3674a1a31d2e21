"""One model round: the accumulated result of a streamed chat-completions response."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from subagent_core import Usage
from subagent_core.kit import DEFAULT_MAX_OUTPUT_BYTES, BoundedText

from ._usage import stream_usage


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for; `arguments` is the raw JSON text it produced."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRound:
    """A complete model response (the stream reached `[DONE]` or a `finish_reason`)."""

    content: str
    reasoning: str | None
    """DeepSeek `reasoning_content`; sent back on assistant tool-call turns."""
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    usage: Usage | None


class StreamFormatError(Exception):
    """A chunk is not the shape of a chat-completions stream chunk."""


class RoundAccumulator:
    """Folds stream chunks into a `ModelRound`, tracking whether anything was shown."""

    __slots__ = ("_calls", "_content", "_reasoning", "finish_reason", "shown", "usage")

    def __init__(self, *, max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES) -> None:
        self._content = BoundedText(max_output_bytes)
        self._reasoning = BoundedText(max_output_bytes)
        self._calls: dict[int, list[str]] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.shown = False
        """True once any text or reasoning was received (and so shown to the observer)."""

    def add(self, chunk: Mapping[str, Any]) -> tuple[str, str]:
        """Applies one chunk; returns its (text, reasoning) deltas for the observer.

        Raises:
            StreamFormatError: the chunk's fields have the wrong types.
        """
        text_delta = ""
        reasoning_delta = ""
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self.usage = stream_usage(cast(Mapping[str, Any], usage))
        choices = chunk.get("choices")
        if choices is None:
            return text_delta, reasoning_delta
        if not isinstance(choices, list):
            raise StreamFormatError
        for choice in cast(list[Any], choices):
            if not isinstance(choice, Mapping):
                raise StreamFormatError
            choice = cast(Mapping[str, Any], choice)
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                delta = cast(Mapping[str, Any], delta)
                content = delta.get("content")
                if isinstance(content, str) and content:
                    text_delta += self._content.add(content)
                reasoning = delta.get("reasoning_content")
                if isinstance(reasoning, str) and reasoning:
                    reasoning_delta += self._reasoning.add(reasoning)
                calls = delta.get("tool_calls")
                if calls is not None:
                    self._add_calls(calls)
            elif delta is not None:
                raise StreamFormatError
            finish = choice.get("finish_reason")
            if isinstance(finish, str):
                self.finish_reason = finish
        if text_delta or reasoning_delta:
            self.shown = True
        return text_delta, reasoning_delta

    def _add_calls(self, calls: object) -> None:
        if not isinstance(calls, list):
            raise StreamFormatError
        for call in cast(list[Any], calls):
            if not isinstance(call, Mapping):
                raise StreamFormatError
            call = cast(Mapping[str, Any], call)
            index = call.get("index", len(self._calls))
            if not isinstance(index, int) or isinstance(index, bool):
                raise StreamFormatError
            slot = self._calls.setdefault(index, ["", "", ""])
            call_id = call.get("id")
            if isinstance(call_id, str) and call_id:
                slot[0] = call_id
            function = call.get("function")
            if isinstance(function, Mapping):
                function = cast(Mapping[str, Any], function)
                name = function.get("name")
                if isinstance(name, str):
                    slot[1] += name
                arguments = function.get("arguments")
                if isinstance(arguments, str):
                    slot[2] += arguments

    @property
    def content(self) -> str:
        """The answer text received so far."""
        return self._content.text

    @property
    def reasoning(self) -> str | None:
        """The reasoning received so far, or None when there was none."""
        return None if self._reasoning.empty else self._reasoning.text

    def result(self) -> ModelRound:
        """The finished round; calls in index order, a missing id replaced by a stable one."""
        calls = tuple(
            ToolCall(id=slot[0] or f"call_{index}", name=slot[1], arguments=slot[2])
            for index, slot in sorted(self._calls.items())
        )
        return ModelRound(
            content=self.content,
            reasoning=self.reasoning,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            usage=self.usage,
        )
