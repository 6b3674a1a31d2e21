"""How a result is shown to a model (foreground) or recorded as a background job."""

from __future__ import annotations

from dataclasses import dataclass

from ._types import SubagentResult

_HEADLINES = {
    "aborted": "subagent run was cancelled",
    "error": "subagent run failed",
    "max-tokens": "subagent run hit its token limit before finishing",
    "refusal": "subagent declined the task",
}


@dataclass(frozen=True, slots=True)
class ToolText:
    """Text for a model-visible tool result."""

    text: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """A background job's end: status, the child's output, and a safe detail."""

    status: str
    """`completed`, `killed` (local cancel) or `failed`."""
    output: str
    detail: str | None

    @property
    def status_line(self) -> str:
        """`[status: <status>]` or `[status: <status>, <detail>]`."""
        if self.detail is None:
            return f"[status: {self.status}]"
        return f"[status: {self.status}, {self.detail}]"


def headline(stop_reason: str) -> str:
    """The one-line summary of a non-completed stop reason."""
    return _HEADLINES.get(stop_reason, f"subagent run ended abnormally ({stop_reason})")


def foreground_text(result: SubagentResult) -> ToolText:
    """Output on success; otherwise headline, diagnostic and partial output, kept apart."""
    if result.stop_reason == "completed":
        return ToolText(result.output, False)
    text = headline(result.stop_reason)
    if result.diagnostic is not None:
        text += f"\nDiagnostic: {result.diagnostic}"
    if result.output:
        text += f"\nPartial output before the run ended:\n{result.output}"
    return ToolText(text, True)


def job_outcome(result: SubagentResult) -> JobOutcome:
    """Maps a result to a job status; a remote abort (with diagnostic) is `failed`, not `killed`."""
    reason = result.stop_reason
    if reason == "completed":
        return JobOutcome("completed", result.output, None)
    if reason == "aborted" and result.diagnostic is None:
        return JobOutcome("killed", result.output, None)
    detail = reason if result.diagnostic is None else f"{reason}; diagnostic: {result.diagnostic}"
    return JobOutcome("failed", result.output, detail)
