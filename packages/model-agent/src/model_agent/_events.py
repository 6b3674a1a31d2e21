"""Typed events an observer sees while the agent works, in the order they happen."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's answer text, as streamed."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning (DeepSeek `reasoning_content`), as streamed."""

    text: str


@dataclass(frozen=True, slots=True)
class Retrying:
    """A transient model-request failure before anything was shown; the next attempt waits."""

    attempt: int
    """1, 2 or 3: the retry about to be made."""
    delay_seconds: float
    reason: str
    """A closed value: `connection-refused`, `connection-reset`, `connection-aborted`,
    `network-unreachable`, `dns-temporary`, `broken-pipe`, `connect-timeout`,
    `first-byte-timeout`, `idle-timeout`, `total-timeout`, `timeout`, `stream-cut`, `http-408`,
    or `http-<status>` for a status the operator listed in `retry_statuses`."""


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """A tool call is about to run (after the model round finished)."""

    call_id: str
    name: str
    arguments: str
    """The raw JSON argument text the model produced."""


@dataclass(frozen=True, slots=True)
class ToolEnded:
    """A tool call finished; `content` is what the model will see."""

    call_id: str
    name: str
    content: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class ChildStarted:
    """An in-process child (subagent_delegate) left the queue and started."""

    child_id: str
    description: str


@dataclass(frozen=True, slots=True)
class ChildEnded:
    """An in-process child ended with `completed`, `failed` or `cancelled`."""

    child_id: str
    description: str
    status: str


ChildLoopEvent = TextDelta | ReasoningDelta | Retrying | ToolStarted | ToolEnded
"""What a delegated child's own loop does (a child never delegates further)."""


@dataclass(frozen=True, slots=True)
class ChildEvent:
    """One event of a running in-process child, between its `ChildStarted` and `ChildEnded`.

    The child's text, reasoning, tool arguments and results are the model's words: show them
    to a human, never put them in a model-visible result of the parent.
    """

    child_id: str
    event: ChildLoopEvent


AgentEvent = (
    TextDelta
    | ReasoningDelta
    | Retrying
    | ToolStarted
    | ToolEnded
    | ChildStarted
    | ChildEnded
    | ChildEvent
)
AgentObserver = Callable[[AgentEvent], None]
