"""The tool seam, for whoever writes or drives a tool outside the agent loop.

A `Tool` gets the `RequestContext` of the parent request (its snapshot: runtime, `Mode`, space,
depth, workspace, shell, the tool names offered) and returns a `ToolOutcome`, the text the model
sees. The two built-in tools are here too: `ProcessExecuteTool` (`process_execute`, one shell
command in the workspace) and `SubagentDelegateTool` (`subagent_delegate`, a task handed to an
in-process child agent). A host that only runs an agent needs none of this: `model_agent` is its
face, and `AgentConfig.mcp_tools` takes any `Tool`.
"""

from ._delegate_tool import SubagentDelegateTool as SubagentDelegateTool
from ._process_tool import ProcessExecuteTool as ProcessExecuteTool
from ._tool import Mode as Mode
from ._tool import RequestContext as RequestContext
from ._tool import Tool as Tool
from ._tool import ToolOutcome as ToolOutcome

__all__ = [
    "Mode",
    "ProcessExecuteTool",
    "RequestContext",
    "SubagentDelegateTool",
    "Tool",
    "ToolOutcome",
]
