"""A conversation as data: typed chat messages a host can store as JSON and give back.

The messages are the OpenAI chat format the model sees (without the system prompt, which the
agent adds on every request, so a mode change takes effect on the next turn). `parse_history`
checks a stored history before it goes back to a model: an endpoint rejects a conversation
whose tool calls are not answered, and a hand-edited file should fail here, with fixed text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Required, TypedDict, cast

Role = Literal["user", "assistant", "tool"]


class FunctionCall(TypedDict):
    """The function an assistant message calls: its name and raw JSON argument text."""

    name: str
    arguments: str


class ToolCallMessage(TypedDict):
    """One tool call of an assistant message."""

    id: str
    type: Literal["function"]
    function: FunctionCall


class ChatMessage(TypedDict, total=False):
    """One message of a conversation (JSON-serialisable as it is).

    `tool_calls` and `reasoning_content` appear on assistant tool-call turns (DeepSeek needs
    the reasoning back), `tool_call_id` on tool results.
    """

    role: Required[Role]
    content: Required[str]
    tool_calls: list[ToolCallMessage]
    tool_call_id: str
    reasoning_content: str


class HistoryError(ValueError):
    """A stored history is not a well-formed conversation; the message is fixed text."""


_KEYS: dict[str, frozenset[str]] = {
    "user": frozenset({"role", "content"}),
    "assistant": frozenset({"role", "content", "tool_calls", "reasoning_content"}),
    "tool": frozenset({"role", "content", "tool_call_id"}),
}


def parse_history(data: object) -> tuple[ChatMessage, ...]:
    """Validates decoded JSON as a conversation and returns it as typed messages.

    Every tool call of an assistant message must be answered by the tool messages right after
    it, and a tool message must answer one of those calls.

    Raises:
        HistoryError: the data is not a well-formed conversation.
    """
    if not isinstance(data, list | tuple):
        raise HistoryError("history must be a list of messages")
    messages: list[ChatMessage] = []
    pending: set[str] = set()
    for index, raw in enumerate(cast(Sequence[Any], data)):
        message = _message(raw, index)
        if message["role"] == "tool":
            call_id = message.get("tool_call_id", "")
            if call_id not in pending:
                raise HistoryError(f"history[{index}] answers no open tool call")
            pending.discard(call_id)
        elif pending:
            raise HistoryError(f"history[{index}] follows unanswered tool calls")
        else:
            pending = {call["id"] for call in message.get("tool_calls", [])}
        messages.append(message)
    if pending:
        raise HistoryError("history ends with unanswered tool calls")
    return tuple(messages)


def _message(raw: object, index: int) -> ChatMessage:
    where = f"history[{index}]"
    if not isinstance(raw, Mapping):
        raise HistoryError(f"{where} must be an object")
    raw = cast(Mapping[str, Any], raw)
    role = raw.get("role")
    if role not in _KEYS:
        raise HistoryError(f"{where}.role must be user, assistant or tool")
    if set(raw) - _KEYS[role]:
        raise HistoryError(f"{where} has a field its role does not allow")
    content = raw.get("content")
    if not isinstance(content, str):
        raise HistoryError(f"{where}.content must be a string")
    message: ChatMessage = {"role": cast(Role, role), "content": content}
    if role == "tool":
        call_id = raw.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise HistoryError(f"{where}.tool_call_id must be a non-empty string")
        message["tool_call_id"] = call_id
    reasoning = raw.get("reasoning_content")
    if reasoning is not None:
        if not isinstance(reasoning, str):
            raise HistoryError(f"{where}.reasoning_content must be a string")
        message["reasoning_content"] = reasoning
    if "tool_calls" in raw:
        message["tool_calls"] = _tool_calls(raw["tool_calls"], where)
    return message


def _tool_calls(raw: object, where: str) -> list[ToolCallMessage]:
    if not isinstance(raw, list) or not raw:
        raise HistoryError(f"{where}.tool_calls must be a non-empty list")
    calls: list[ToolCallMessage] = []
    for number, item in enumerate(cast(list[Any], raw)):
        place = f"{where}.tool_calls[{number}]"
        if not isinstance(item, Mapping):
            raise HistoryError(f"{place} must be an object")
        item = cast(Mapping[str, Any], item)
        function = item.get("function")
        call_id = item.get("id")
        if (
            not isinstance(call_id, str)
            or not call_id
            or item.get("type", "function") != "function"
            or not isinstance(function, Mapping)
        ):
            raise HistoryError(f"{place} must have an id and a function")
        function = cast(Mapping[str, Any], function)
        name = function.get("name")
        arguments = function.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, str):
            raise HistoryError(f"{place}.function needs a name and argument text")
        calls.append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    return calls
