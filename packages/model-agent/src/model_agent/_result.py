"""What one `Agent.run` returns: a value for every expected outcome."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from subagent_core import Usage

from ._activity import ActivityEntry
from ._history import ChatMessage

AgentStatus = Literal["completed", "failed", "cancelled", "max-tokens", "step-limit", "refusal"]
"""`refusal`: the model stopped with `finish_reason: content_filter` (the answer is withheld)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentResult:
    """How one `Agent.run` ended."""

    status: AgentStatus
    """The outcome, from a closed set."""
    output: str
    """The final answer; on failure or cancel, the partial answer text shown (may be empty)."""
    error: str | None = None
    """Safe text from our vocabulary when `status` is `failed` (never the server's words)."""
    usage: Usage | None = None
    """Tokens summed over every model request of the run; None when none reported usage."""
    activity: tuple[ActivityEntry, ...] = ()
    """Everything the run did, in order (children included, as the tools recorded them)."""
    history: tuple[ChatMessage, ...] = ()
    """The conversation after this run, without the system prompt: pass it as the next run's
    `history` (it is JSON as it is). Well-formed even after a cancel or failure."""
