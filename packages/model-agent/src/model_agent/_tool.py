"""The tool seam inside the agent: what a tool gets, and what it gives back to the model."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from subagent_core import CancelSignal, Usage

from ._activity import ActivityEntry, ActivityLog
from ._events import AgentEvent, AgentObserver

Runtime = Literal["model", "opencode", "continue", "deepseek-harness"]
Mode = Literal["ask", "execute"]
Space = Literal["local", "ssh"]
RequestState = Literal["active", "cancelling", "terminal"]


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What the model sees for one call: JSON or plain text, and whether it is a tool failure."""

    content: str
    is_error: bool = False
    usage: Usage | None = None
    """Model usage the call spent on the run's behalf (a delegated child's), added to the
    run's total; `None` for tools that call no model."""


@dataclass(slots=True)
class RequestContext:
    """Facts of one parent request, frozen when it began (snapshot), plus its live state.

    Every tool call re-validates against this: runtime, mode, space, depth and `state`.
    The agent loop builds one per `Agent.run`; tools report through `emit` and `record`, which
    drop anything arriving once the request is `terminal` (late events only clean up).
    """

    runtime: Runtime
    mode: Mode
    space: Space
    depth: int
    workspace: Path
    """The workspace root, resolved (realpath) at request start."""
    workspace_identity: tuple[int, int]
    """(st_dev, st_ino) of the root at request start; a change rejects process calls."""
    shell: str | None
    """The shell frozen for this request (`/bin/bash`, `/bin/sh`, …), or None."""
    tool_names: tuple[str, ...]
    """The tool snapshot offered to the model for this request."""
    cancel: CancelSignal
    observer: AgentObserver | None = None
    """The host's observer, already gated: it sees nothing once the request is terminal."""
    state: RequestState = "active"
    activity: ActivityLog = field(default_factory=ActivityLog)
    """This request's activity record; tools append child entries through `record`."""
    extra: dict[str, Any] = field(default_factory=dict[str, Any])
    mcp_tools: tuple[Tool, ...] = ()
    """This request's MCP tools (its snapshot), which a delegated child may inherit."""

    def emit(self, event: AgentEvent) -> None:
        """Passes `event` to the observer while the request is not terminal."""
        if self.state != "terminal" and self.observer is not None:
            self.observer(event)

    def record(self, entry: ActivityEntry) -> bool:
        """Appends `entry` to the activity record; False (nothing kept) once terminal."""
        if self.state == "terminal":
            return False
        return self.activity.append(entry)


ApprovalCallback = Callable[[str, Mapping[str, Any]], Awaitable[bool]]
"""Asked before an Execute action (tool name, parsed arguments) when the host wants approval."""


class Tool(Protocol):
    """A tool the model can call."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> Mapping[str, Any]:
        """JSON Schema of the arguments object."""
        ...

    async def call(self, arguments: Mapping[str, Any], context: RequestContext) -> ToolOutcome:
        """Runs the call. Failures the model can act on are `ToolOutcome(is_error=True)`."""
        ...
