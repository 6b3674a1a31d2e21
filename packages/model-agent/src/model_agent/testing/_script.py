"""The scripted model server's script: JSON-serializable rules, parsed and validated.

```json
{"rules": [{"match": "say hi", "replies": [{"text": "Hi!", "chunks": 2}]}]}
```
A request is answered by the first rule whose `match` occurs in the text of the conversation's
first user message (so concurrent conversations keep their own script). Each rule's replies
are consumed in order, one per request (`times` repeats a reply); the last reply repeats once
the list is exhausted. See the package AGENTS.md for every reply field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

Moment = Literal["before-response", "after-headers", "after-text"]
_MOMENTS: tuple[str, ...] = ("before-response", "after-headers", "after-text")


class ScriptError(ValueError):
    """The script is not valid; the message names the offending rule/reply/field."""


@dataclass(frozen=True, slots=True)
class ScriptedToolCall:
    """A tool call the scripted model makes."""

    name: str
    arguments: str
    """The raw argument text streamed (objects in the script are JSON-encoded)."""
    id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One scripted response (see the package AGENTS.md for the field meanings)."""

    text: str = ""
    chunks: int = 1
    echo_prompt: bool = False
    """Answer the conversation's last user message instead of `text` (each turn of a session
    answers its own prompt)."""
    json: Any = None
    """A JSON value answered (as compact JSON text, in `chunks` pieces) instead of `text` when
    the request asks for JSON (`response_format` `json_schema` or `json_object`)."""
    reasoning: str = ""
    reasoning_chunks: int = 1
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Mapping[str, Any] | None = None
    """Sent as the usage chunk as given: integers, or objects of integers such as
    `prompt_tokens_details: {cached_tokens: N}`."""
    status: int | None = None
    status_body: Any = None
    drop: Moment | None = None
    hang: Moment | None = None
    reset: bool = False
    error: Any = None
    malformed: bool = False
    delay_ms: int = 0
    first_byte_delay_ms: int = 0
    keepalives: int = 0
    done: bool = True
    times: int = 1
    flood_text_bytes: int = 0
    flood_event_bytes: int = 0


@dataclass(frozen=True, slots=True)
class Rule:
    """Replies for conversations whose first user message contains `match`."""

    match: str
    replies: tuple[Reply, ...]


def parse_script(data: object) -> tuple[Rule, ...]:
    """Validates a script: decoded JSON (`{"rules": [...]}` or a list of rules) or `Rule`s.

    Raises:
        ScriptError: the script is malformed.
    """
    if isinstance(data, list | tuple) and all(
        isinstance(rule, Rule) for rule in cast(Sequence[Any], data)
    ):
        return tuple(cast(Sequence[Rule], data))
    if isinstance(data, Mapping):
        data = cast(Mapping[str, Any], data).get("rules")
    if not isinstance(data, list):
        raise ScriptError('a script is {"rules": [...]} or a list of rules')
    rules: list[Rule] = []
    for index, raw in enumerate(cast(list[Any], data)):
        where = f"rules[{index}]"
        if not isinstance(raw, Mapping):
            raise ScriptError(f"{where} must be an object")
        raw = cast(Mapping[str, Any], raw)
        match = raw.get("match", "")
        if not isinstance(match, str):
            raise ScriptError(f"{where}.match must be a string")
        replies = raw.get("replies")
        if not isinstance(replies, list) or not replies:
            raise ScriptError(f"{where}.replies must be a non-empty list")
        parsed = tuple(
            _reply(item, f"{where}.replies[{n}]") for n, item in enumerate(cast(list[Any], replies))
        )
        rules.append(Rule(match, parsed))
    return tuple(rules)


def load_script(path: str) -> tuple[Rule, ...]:
    """Reads and validates a JSON script file.

    Raises:
        ScriptError: unreadable file, bad JSON or a malformed script.
    """
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError) as error:
        raise ScriptError(f"cannot read script {path!r}: {error}") from None
    return parse_script(data)


_KNOWN = frozenset(
    {
        "text",
        "chunks",
        "echo_prompt",
        "json",
        "reasoning",
        "reasoning_chunks",
        "tool_calls",
        "finish_reason",
        "usage",
        "status",
        "body",
        "drop",
        "hang",
        "reset",
        "error",
        "malformed",
        "delay_ms",
        "first_byte_delay_ms",
        "keepalives",
        "done",
        "times",
        "flood_text_bytes",
        "flood_event_bytes",
    }
)


def _reply(raw: object, where: str) -> Reply:
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{where} must be an object")
    raw = cast(Mapping[str, Any], raw)
    unknown = sorted(set(raw) - _KNOWN)
    if unknown:
        raise ScriptError(f"{where} has unknown field {unknown[0]!r}")

    def integer(name: str, default: int, minimum: int) -> int:
        value = raw.get(name, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ScriptError(f"{where}.{name} must be an integer >= {minimum}")
        return value

    def string(name: str) -> str:
        value = raw.get(name, "")
        if not isinstance(value, str):
            raise ScriptError(f"{where}.{name} must be a string")
        return value

    def moment(name: str) -> Moment | None:
        value = raw.get(name)
        if value is None:
            return None
        if value is True:
            return "before-response"
        if value not in _MOMENTS:
            raise ScriptError(f"{where}.{name} must be one of {', '.join(_MOMENTS)}")
        return cast(Moment, value)

    status = raw.get("status")
    if status is not None and (
        not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599
    ):
        raise ScriptError(f"{where}.status must be an HTTP status code")
    finish = raw.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise ScriptError(f"{where}.finish_reason must be a string")
    usage = raw.get("usage")
    if usage is not None and not (
        isinstance(usage, Mapping)
        and all(_usage_value(v) for v in cast(Mapping[str, Any], usage).values())
    ):
        raise ScriptError(
            f"{where}.usage must map names to integers or to objects of integers"
            " (e.g. prompt_tokens_details)"
        )
    done = raw.get("done", True)
    malformed = raw.get("malformed", False)
    reset = raw.get("reset", False)
    echo_prompt = raw.get("echo_prompt", False)
    if not all(isinstance(flag, bool) for flag in (done, malformed, reset, echo_prompt)):
        raise ScriptError(f"{where}.done, .malformed, .reset and .echo_prompt must be booleans")
    return Reply(
        text=string("text"),
        chunks=integer("chunks", 1, 1),
        echo_prompt=echo_prompt,
        json=raw.get("json"),
        reasoning=string("reasoning"),
        reasoning_chunks=integer("reasoning_chunks", 1, 1),
        tool_calls=_tool_calls(raw.get("tool_calls", []), where),
        finish_reason=finish,
        usage=cast(Mapping[str, Any] | None, usage),
        status=status,
        status_body=raw.get("body"),
        drop=moment("drop"),
        hang=moment("hang"),
        reset=reset,
        error=raw.get("error"),
        malformed=malformed,
        delay_ms=integer("delay_ms", 0, 0),
        first_byte_delay_ms=integer("first_byte_delay_ms", 0, 0),
        keepalives=integer("keepalives", 0, 0),
        done=done,
        times=integer("times", 1, 1),
        flood_text_bytes=integer("flood_text_bytes", 0, 0),
        flood_event_bytes=integer("flood_event_bytes", 0, 0),
    )


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _usage_value(value: object) -> bool:
    if isinstance(value, Mapping):
        return all(_integer(item) for item in cast(Mapping[str, Any], value).values())
    return _integer(value)


def _tool_calls(raw: object, where: str) -> tuple[ScriptedToolCall, ...]:
    if not isinstance(raw, list):
        raise ScriptError(f"{where}.tool_calls must be a list")
    calls: list[ScriptedToolCall] = []
    for n, item in enumerate(cast(list[Any], raw)):
        if not isinstance(item, Mapping):
            raise ScriptError(f"{where}.tool_calls[{n}] must be an object")
        item = cast(Mapping[str, Any], item)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ScriptError(f"{where}.tool_calls[{n}].name must be a non-empty string")
        arguments = item.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        call_id = item.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise ScriptError(f"{where}.tool_calls[{n}].id must be a string")
        calls.append(ScriptedToolCall(name, text, call_id))
    return tuple(calls)
