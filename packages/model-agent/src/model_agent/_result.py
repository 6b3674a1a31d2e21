"""What one `Agent.run` returns: a value for every expected outcome."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from subagent_core import Usage

from ._activity import ActivityEntry
from ._history import ChatMessage

AgentStatus = Literal["completed", "failed", "cancelled", "max-tokens", "step-limit", "refusal"]
"""`refusal`: the model stopped with `finish_reason: content_filter` (the answer is withheld)."""


OUTPUT_SCHEMA_ERROR = "the answer did not validate against the output schema, twice"
"""`AgentResult.error` of a run whose final answer failed the schema check after its retry."""


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
    structured_output: object = None
    """With `AgentConfig.output_schema`: the parsed JSON value of a `completed` run's `output`
    (it validated against the schema); `None` otherwise."""
    history: tuple[ChatMessage, ...] = ()
    """The conversation after this run, without the system prompt: pass it as the next run's
    `history` (it is JSON as it is). Well-formed even after a cancel or failure."""
