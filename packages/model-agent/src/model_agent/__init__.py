"""model-agent: a direct-model agent over an OpenAI-compatible streaming API.

`Agent(config).run(prompt, cancel)` streams model rounds through `ModelClient` (bounded retries
of transient failures only), runs the round's tool calls one at a time under the Ask/Execute
gating, and returns an `AgentResult`. `model_agent.testing` holds the scripted model server.
"""

from ._activity import ActivityEntry as ActivityEntry
from ._activity import ActivityKind as ActivityKind
from ._activity import ActivityLog as ActivityLog
from ._agent import Agent as Agent
from ._config import DEFAULT_BASE_URL as DEFAULT_BASE_URL
from ._config import DEFAULT_MODEL as DEFAULT_MODEL
from ._config import AgentConfig as AgentConfig
from ._config import ModelEndpoint as ModelEndpoint
from ._config import PhaseTimeouts as PhaseTimeouts
from ._delegate_queue import DelegateQueue as DelegateQueue
from ._delegate_queue import QueueFullError as QueueFullError
from ._delegate_tool import SubagentDelegateTool as SubagentDelegateTool
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
from ._history import FunctionCall as FunctionCall
from ._history import HistoryError as HistoryError
from ._history import ToolCallMessage as ToolCallMessage
from ._history import parse_history as parse_history
from ._mcp_config import MCPHTTPServer as MCPHTTPServer
from ._mcp_config import MCPServer as MCPServer
from ._mcp_config import MCPStdioServer as MCPStdioServer
from ._model_client import RETRY_DELAYS_SECONDS as RETRY_DELAYS_SECONDS
from ._model_client import FailureKind as FailureKind
from ._model_client import ModelClient as ModelClient
from ._model_client import ModelRequestError as ModelRequestError
from ._model_provider import ModelProvider as ModelProvider
from ._process_tool import ProcessExecuteTool as ProcessExecuteTool
from ._process_tool import ProcessState as ProcessState
from ._result import AgentResult as AgentResult
from ._result import AgentStatus as AgentStatus
from ._round import ModelRound as ModelRound
from ._round import ToolCall as ToolCall
from ._shell import find_shell as find_shell
from ._shell import missing_shell_diagnostic as missing_shell_diagnostic
from ._tool import ApprovalCallback as ApprovalCallback
from ._tool import Mode as Mode
from ._tool import RequestContext as RequestContext
from ._tool import RequestState as RequestState
from ._tool import Runtime as Runtime
from ._tool import Space as Space
from ._tool import Tool as Tool
from ._tool import ToolOutcome as ToolOutcome

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL",
    "RETRY_DELAYS_SECONDS",
    "ActivityEntry",
    "ActivityKind",
    "ActivityLog",
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
    "DelegateQueue",
    "FailureKind",
    "FunctionCall",
    "HistoryError",
    "MCPHTTPServer",
    "MCPServer",
    "MCPStdioServer",
    "Mode",
    "ModelClient",
    "ModelEndpoint",
    "ModelProvider",
    "ModelRequestError",
    "ModelRound",
    "PhaseTimeouts",
    "ProcessExecuteTool",
    "ProcessState",
    "QueueFullError",
    "ReasoningDelta",
    "RequestContext",
    "RequestState",
    "Retrying",
    "Runtime",
    "Space",
    "SubagentDelegateTool",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallMessage",
    "ToolEnded",
    "ToolOutcome",
    "ToolStarted",
    "find_shell",
    "missing_shell_diagnostic",
    "parse_history",
]
