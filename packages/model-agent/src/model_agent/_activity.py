"""The activity record of one agent: everything that happened, in the order it happened."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ActivityKind = Literal[
    "user",
    "answer",
    "reasoning",
    "retry",
    "tool",
    "child-started",
    "child-ended",
    "child-tool",
    "summary",
    "failure",
]
"""What an entry records (closed set)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivityEntry:
    """One step of the record; fields that do not apply to a kind stay `None`.

    - `user`: `text` is the prompt of a run.
    - `answer` / `reasoning`: `text` is one model round's answer text / reasoning.
    - `retry`: `attempt`, `delay_seconds`, `reason` of a model-request retry.
    - `tool`: `call_id`, `name`, `arguments` (raw JSON text), `text` (what the model saw),
      `is_error`.
    - `child-started` / `child-ended`: `child_id`, `name` (the child's description), and for
      the end `status` (`completed|failed|cancelled`) and `text` (the child's output).
    - `child-tool`: one tool call a child made, between its start and end: `child_id`, and the
      fields of a `tool` entry.
    - `summary`: `text` is the summary that replaced older turns.
    - `failure`: `reason` is the closed reason a model request failed with.
    """

    kind: ActivityKind
    text: str | None = None
    name: str | None = None
    call_id: str | None = None
    arguments: str | None = None
    is_error: bool = False
    status: str | None = None
    child_id: str | None = None
    attempt: int | None = None
    delay_seconds: float | None = None
    reason: str | None = None


class ActivityLog:
    """Append-only record shared by the loop and the tools of one agent.

    Once the owning request is terminal, `append` ignores entries: late child text and tool
    events are only used for cleanup, never recorded.
    """

    __slots__ = ("_closed", "_entries")

    def __init__(self) -> None:
        self._entries: list[ActivityEntry] = []
        self._closed = False

    def append(self, entry: ActivityEntry) -> bool:
        """Records `entry`; returns False (and records nothing) once the request is terminal."""
        if self._closed:
            return False
        self._entries.append(entry)
        return True

    def close(self) -> None:
        """Stops recording (the request reached a terminal state)."""
        self._closed = True

    def snapshot(self) -> tuple[ActivityEntry, ...]:
        """The entries so far, in order."""
        return tuple(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
