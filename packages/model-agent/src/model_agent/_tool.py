"""The tool seam inside the agent: what a tool gets, and what it gives back to the model."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from subagent_core import CancelSignal

from ._events import AgentObserver

Runtime = Literal["model", "opencode", "continue", "deepseek-harness"]
Mode = Literal["ask", "execute"]
Space = Literal["local", "ssh"]
RequestState = Literal["active", "cancelling", "terminal"]


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What the model sees for one call: JSON or plain text, and whether it is a tool failure."""

    content: str
    is_error: bool = False


@dataclass(slots=True)
class RequestContext:
    """Facts of one parent request, frozen when it began (snapshot), plus its live state.

    Every tool call re-validates against this: runtime, mode, space, depth and `state`.
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
    state: RequestState = "active"
    extra: dict[str, Any] = field(default_factory=dict[str, Any])


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
