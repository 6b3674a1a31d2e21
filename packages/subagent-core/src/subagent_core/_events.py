"""Live run activity: event types, their closed vocabularies, and the bounded per-run buffer.

Trust rule: `text`, `title`, `call_id` and plan entry `content` are written by the child. They
are for a human's screen and host logs only, never for a model-visible result, a diagnostic or
an exception message. Every other field is a closed vocabulary (normalised on construction, so
an unknown value becomes `other`/`unknown`) or an observed number.

`EventBuffer.publish` is synchronous and never blocks, so a provider can publish from the task
that reads the child's pipe: reading the child never waits on the consumer. When the consumer
lags, the oldest events are dropped and counted into one `EventsDropped` in their place.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Final, Literal, cast, get_args

import anyio

from ._diagnostics import safe_tool_kind
from ._types import Cost, Usage

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
"""What a tool call does (the ACP set); anything else is `other`."""

ToolCallStatus = Literal["pending", "in_progress", "completed", "failed", "unknown"]
"""Where a tool call is (the ACP set); anything else is `unknown`."""

PlanEntryPriority = Literal["high", "medium", "low", "unknown"]
"""A plan entry's priority (the ACP set); anything else is `unknown`."""

PlanEntryStatus = Literal["pending", "in_progress", "completed", "unknown"]
"""A plan entry's progress (the ACP set); anything else is `unknown`."""

PermissionPolicy = Literal["allow", "reject", "ask", "unknown"]
"""How the parent answers a child's permission request: a fixed policy, or asking its user."""

PermissionDecision = Literal[
    "allow_once", "allow_always", "reject_once", "reject_always", "cancelled", "unknown"
]
"""The answer the child received: the ACP option kind selected, or `cancelled`."""

DEFAULT_EVENT_CAPACITY: Final = 1024
"""Events a run's buffer holds for a lagging consumer before it drops the oldest."""

DEFAULT_EVENT_TEXT_CHARS: Final = 4 * 1024 * 1024
"""Child-written characters a run's buffer holds before it drops the oldest events."""


def _member(value: object, allowed: tuple[str, ...], fallback: str) -> str:
    value = getattr(value, "value", value)  # enum members of a protocol library
    return value if isinstance(value, str) and value in allowed else fallback


def tool_kind(value: object) -> ToolKind:
    """Maps a child-supplied tool kind into `ToolKind` (`other` when unknown)."""
    return cast(ToolKind, safe_tool_kind(value))


def tool_call_status(value: object) -> ToolCallStatus:
    """Maps a child-supplied tool call status into `ToolCallStatus` (`unknown` when unknown)."""
    return cast(ToolCallStatus, _member(value, _TOOL_CALL_STATUSES, "unknown"))


def plan_entry_priority(value: object) -> PlanEntryPriority:
    """Maps a child-supplied priority into `PlanEntryPriority` (`unknown` when unknown)."""
    return cast(PlanEntryPriority, _member(value, _PLAN_PRIORITIES, "unknown"))


def plan_entry_status(value: object) -> PlanEntryStatus:
    """Maps a child-supplied plan entry status into `PlanEntryStatus` (`unknown` when unknown)."""
    return cast(PlanEntryStatus, _member(value, _PLAN_STATUSES, "unknown"))


def permission_policy(value: object) -> PermissionPolicy:
    """Maps a policy name into `PermissionPolicy` (`unknown` when unknown)."""
    return cast(PermissionPolicy, _member(value, _POLICIES, "unknown"))


def permission_decision(value: object) -> PermissionDecision:
    """Maps a decision into `PermissionDecision` (`unknown` when unknown)."""
    return cast(PermissionDecision, _member(value, _DECISIONS, "unknown"))


_TOOL_CALL_STATUSES: Final = get_args(ToolCallStatus)
_PLAN_PRIORITIES: Final = get_args(PlanEntryPriority)
_PLAN_STATUSES: Final = get_args(PlanEntryStatus)
_POLICIES: Final = get_args(PermissionPolicy)
_DECISIONS: Final = get_args(PermissionDecision)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _optional_text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageChunk:
    """A piece of the child's answer as it streams."""

    text: str
    """Child-controlled: for a human's screen and host logs only."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", _text(self.text))


@dataclass(frozen=True, slots=True, kw_only=True)
class ThoughtChunk:
    """A piece of the child's reasoning as it streams."""

    text: str
    """Child-controlled: for a human's screen and host logs only."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", _text(self.text))


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEvent:
    """A tool call started or changed; `None` fields were not stated by this update.

    Updates of one call share its `call_id`; a consumer merges them.
    """

    call_id: str
    """Child-controlled identifier: correlate updates with it, never show it to a model."""
    kind: ToolKind | None = None
    status: ToolCallStatus | None = None
    title: str | None = None
    """Child-controlled: for a human's screen and host logs only."""
    exit_code: int | None = None
    """The exit code of a finished command the parent ran itself (observed, safe)."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "call_id", _text(self.call_id))
        set_(self, "kind", None if self.kind is None else tool_kind(self.kind))
        set_(self, "status", None if self.status is None else tool_call_status(self.status))
        set_(self, "title", _optional_text(self.title))
        code = cast(object, self.exit_code)
        set_(
            self,
            "exit_code",
            code if isinstance(code, int) and not isinstance(code, bool) else None,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanEntry:
    """One step of the child's plan."""

    content: str
    """Child-controlled: for a human's screen and host logs only."""
    priority: PlanEntryPriority = "unknown"
    status: PlanEntryStatus = "unknown"

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "content", _text(self.content))
        set_(self, "priority", plan_entry_priority(self.priority))
        set_(self, "status", plan_entry_status(self.status))


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanEvent:
    """The child's whole current plan (each plan event replaces the previous one)."""

    entries: tuple[PlanEntry, ...]
    """Any iterable of `PlanEntry` is accepted and stored as a tuple."""

    def __post_init__(self) -> None:
        entries = tuple(cast("Iterable[object]", self.entries))
        object.__setattr__(
            self, "entries", tuple(entry for entry in entries if isinstance(entry, PlanEntry))
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionEvent:
    """The child asked for permission and the parent answered."""

    tool_kind: ToolKind | None
    """What the child wanted to do, if it said (closed set)."""
    policy: PermissionPolicy
    decision: PermissionDecision

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "tool_kind", None if self.tool_kind is None else tool_kind(self.tool_kind))
        set_(self, "policy", permission_policy(self.policy))
        set_(self, "decision", permission_decision(self.decision))


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageEvent:
    """Token counts and cost for the run so far (running totals; the latest supersedes)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    cost: Cost | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_tokens", _count(self.input_tokens))
        object.__setattr__(self, "output_tokens", _count(self.output_tokens))
        object.__setattr__(self, "cached_input_tokens", _count(self.cached_input_tokens))
        cost = cast(object, self.cost)
        object.__setattr__(self, "cost", cost if isinstance(cost, Cost) else None)

    @classmethod
    def of(cls, usage: Usage) -> UsageEvent:
        """The event that reports `usage` (a provider's running totals, as one value)."""
        return cls(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            cost=usage.cost,
        )

    @property
    def usage(self) -> Usage:
        """The totals this event reports, as a `Usage` (its counts already normalised)."""
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_input_tokens=self.cached_input_tokens,
            cost=self.cost,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class EventsDropped:
    """Stands in for `count` events the consumer was too slow to receive."""

    count: int


SubagentEvent = (
    MessageChunk
    | ThoughtChunk
    | ToolCallEvent
    | PlanEvent
    | PermissionEvent
    | UsageEvent
    | EventsDropped
)
"""Everything `SubagentRun.events()` yields."""


def _text_size(event: SubagentEvent) -> int:
    if isinstance(event, MessageChunk | ThoughtChunk):
        return len(event.text)
    if isinstance(event, ToolCallEvent):
        return len(event.call_id) + len(event.title or "")
    if isinstance(event, PlanEvent):
        return sum(len(entry.content) for entry in event.entries)
    return 0


class EventBuffer:
    """A run's bounded event queue: one producer (the provider), one consumer.

    At most `capacity` events and about `max_text_chars` child-written characters are held
    (the newest event is always kept). Beyond that the oldest are dropped, and the consumer
    receives one `EventsDropped(count)` where they were. After `close()` new events are
    ignored, and the consumer receives what is left, then its iteration ends.
    """

    __slots__ = ("_capacity", "_chars", "_closed", "_dropped", "_events", "_max_chars", "_wakeup")

    def __init__(
        self,
        capacity: int = DEFAULT_EVENT_CAPACITY,
        *,
        max_text_chars: int = DEFAULT_EVENT_TEXT_CHARS,
    ) -> None:
        if isinstance(capacity, bool) or capacity < 1:
            raise ValueError("capacity must be a positive int")
        if isinstance(max_text_chars, bool) or max_text_chars < 1:
            raise ValueError("max_text_chars must be a positive int")
        self._capacity = capacity
        self._max_chars = max_text_chars
        self._events: deque[tuple[SubagentEvent, int]] = deque()
        self._chars = 0
        self._dropped = 0
        self._closed = False
        self._wakeup: anyio.Event | None = None

    @property
    def closed(self) -> bool:
        """True once `close()` was called."""
        return self._closed

    def __len__(self) -> int:
        """Events held now (a pending `EventsDropped` not included)."""
        return len(self._events)

    def publish(self, event: SubagentEvent) -> None:
        """Queues `event` without waiting; drops the oldest held events when over a bound.

        Call it from the event loop's thread. After `close()` it does nothing.
        """
        if self._closed:
            return
        size = _text_size(event)
        self._events.append((event, size))
        self._chars += size
        while len(self._events) > self._capacity or (
            self._chars > self._max_chars and len(self._events) > 1
        ):
            dropped, dropped_size = self._events.popleft()
            self._chars -= dropped_size
            self._dropped += dropped.count if isinstance(dropped, EventsDropped) else 1
        self._wake()

    def close(self) -> None:
        """Ends the stream: the consumer gets what is held, then its iteration stops."""
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        wakeup, self._wakeup = self._wakeup, None
        if wakeup is not None:
            wakeup.set()

    def _take(self) -> SubagentEvent | None:
        if self._dropped:
            count, self._dropped = self._dropped, 0
            return EventsDropped(count=count)
        if self._events:
            event, size = self._events.popleft()
            self._chars -= size
            return event
        return None

    async def events(self) -> AsyncIterator[SubagentEvent]:
        """The held and future events, in order, until the buffer is closed and drained.

        Each event is delivered once, to whichever iterator takes it first.
        """
        while True:
            event = self._take()
            if event is not None:
                yield event
                continue
            if self._closed:
                return
            if self._wakeup is None:
                self._wakeup = anyio.Event()
            await self._wakeup.wait()
