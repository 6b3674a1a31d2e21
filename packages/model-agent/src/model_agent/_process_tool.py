"""`process_execute`: one shell command in the workspace, bounded in time, output and reach."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._tool import RequestContext, ToolOutcome

PROCESS_EXECUTE = "process_execute"


class ProcessExecuteTool:
    """Runs a command through the request's frozen shell (work in progress)."""

    @property
    def name(self) -> str:
        return PROCESS_EXECUTE

    @property
    def description(self) -> str:
        return "Run a shell command in the workspace."

    @property
    def parameters(self) -> Mapping[str, Any]:
        return {"type": "object", "properties": {"command": {"type": "string"}}}

    async def call(self, arguments: Mapping[str, Any], context: RequestContext) -> ToolOutcome:
        return ToolOutcome("process_execute is not implemented yet", is_error=True)
