"""`subagent_delegate`: hand a task to an in-process child agent (depth 1, narrower tools)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._config import AgentConfig
from ._tool import RequestContext, ToolOutcome

SUBAGENT_DELEGATE = "subagent_delegate"


class SubagentDelegateTool:
    """Starts a child agent through the `model` provider (work in progress)."""

    def __init__(self, config: AgentConfig) -> None:
        self._config = config

    @property
    def name(self) -> str:
        return SUBAGENT_DELEGATE

    @property
    def description(self) -> str:
        return "Delegate a task to a child agent."

    @property
    def parameters(self) -> Mapping[str, Any]:
        return {"type": "object", "properties": {"task": {"type": "string"}}}

    async def call(self, arguments: Mapping[str, Any], context: RequestContext) -> ToolOutcome:
        return ToolOutcome("subagent_delegate is not implemented yet", is_error=True)
