"""model-agent: a direct-model agent over an OpenAI-compatible streaming API.

`Agent(config).run(prompt, cancel)` streams model rounds through `ModelClient` (bounded retries
of transient failures only), runs the round's tool calls one at a time under the Ask/Execute
gating, and returns an `AgentResult`; `ModelProvider` serves it to a
`subagent_core.SubagentRegistry` as the in-process `model` provider. This module is the face for
the agent's user: its config, results, events, history and MCP servers. The tool seam and the
built-in tools are `model_agent.tools`; `model_agent.testing` holds the scripted model server.
"""

from ._activity import ActivityEntry as ActivityEntry
from ._activity import ActivityKind as ActivityKind
from ._agent import Agent as Agent
from ._config import AgentConfig as AgentConfig
from ._config import ModelEndpoint as ModelEndpoint
from ._config import PhaseTimeouts as PhaseTimeouts
from ._events import AgentEvent as AgentEvent
from ._events import AgentObserver as AgentObserver
from ._events import ChildEnded as ChildEnded
from ._events import ChildEvent as ChildEvent
from ._events import ChildLoopEvent as ChildLoopEvent
from ._events import ChildStarted as ChildStarted
from ._events import ReasoningDelta as ReasoningDelta
from ._events import Retrying as Retrying
from ._events import TextDelta as TextDelta
from ._events import ToolEnded as ToolEnded
from ._events import ToolStarted as ToolStarted
from ._history import ChatMessage as ChatMessage
from ._history import HistoryError as HistoryError
from ._history import parse_history as parse_history
from ._mcp_config import MCPHTTPServer as MCPHTTPServer
from ._mcp_config import MCPServer as MCPServer
from ._mcp_config import MCPStdioServer as MCPStdioServer
from ._model_client import ModelClient as ModelClient
from ._model_client import ModelRequestError as ModelRequestError
from ._model_provider import ModelProvider as ModelProvider
from ._result import AgentResult as AgentResult
from ._result import AgentStatus as AgentStatus
from ._tool import ApprovalCallback as ApprovalCallback

__all__ = [
    "ActivityEntry",
    "ActivityKind",
    "Agent",
    "AgentConfig",
    "AgentEvent",
    "AgentObserver",
    "AgentResult",
    "AgentStatus",
    "ApprovalCallback",
    "ChatMessage",
    "ChildEnded",
    "ChildEvent",
    "ChildLoopEvent",
    "ChildStarted",
    "HistoryError",
    "MCPHTTPServer",
    "MCPServer",
    "MCPStdioServer",
    "ModelClient",
    "ModelEndpoint",
    "ModelProvider",
    "ModelRequestError",
    "PhaseTimeouts",
    "ReasoningDelta",
    "Retrying",
    "TextDelta",
    "ToolEnded",
    "ToolStarted",
    "parse_history",
]
