"""subagent-core: the seam every subagent provider plugs into — the user's face.

A parent builds a `SubagentRequest`, starts it through a `SubagentRegistry` by provider name,
and gets back a `SubagentRun` whose `result()` never raises for child-level failure and whose
diagnostic is safe, fixed-vocabulary text of at most 4096 UTF-8 bytes.

This module is for users of providers: request, result, run, registry, cancel signal,
capabilities, usage and cost, events, permission settings, presentation, errors, `child_env`,
MCP server specs and placements. What a provider author needs besides (framing, managed
processes, diagnostics renderers, event buffers, deadlines, …) is in `subagent_core.kit`.
"""

from ._cancel import CancelSignal as CancelSignal
from ._diagnostics import DIAGNOSTIC_MAX_BYTES as DIAGNOSTIC_MAX_BYTES
from ._environment import child_env as child_env
from ._errors import SubagentError as SubagentError
from ._errors import SubagentStartError as SubagentStartError
from ._events import EventsDropped as EventsDropped
from ._events import MessageChunk as MessageChunk
from ._events import PermissionDecision as PermissionDecision
from ._events import PermissionEvent as PermissionEvent
from ._events import PermissionPolicy as PermissionPolicy
from ._events import PlanEntry as PlanEntry
from ._events import PlanEntryPriority as PlanEntryPriority
from ._events import PlanEntryStatus as PlanEntryStatus
from ._events import PlanEvent as PlanEvent
from ._events import SubagentEvent as SubagentEvent
from ._events import ThoughtChunk as ThoughtChunk
from ._events import ToolCallEvent as ToolCallEvent
from ._events import ToolCallStatus as ToolCallStatus
from ._events import ToolKind as ToolKind
from ._events import UsageEvent as UsageEvent
from ._mcp_servers import MCPHTTPServerSpec as MCPHTTPServerSpec
from ._mcp_servers import MCPServerSpec as MCPServerSpec
from ._mcp_servers import MCPSSEServerSpec as MCPSSEServerSpec
from ._mcp_servers import MCPStdioServerSpec as MCPStdioServerSpec
from ._permission import READS_POLICY as READS_POLICY
from ._permission import KindPolicy as KindPolicy
from ._permission import OptionKind as OptionKind
from ._permission import PermissionAsk as PermissionAsk
from ._permission import PermissionCallback as PermissionCallback
from ._permission import PermissionSetting as PermissionSetting
from ._placement import LocalPlacement as LocalPlacement
from ._placement import Placement as Placement
from ._presentation import JobOutcome as JobOutcome
from ._presentation import ToolText as ToolText
from ._presentation import foreground_text as foreground_text
from ._presentation import job_outcome as job_outcome
from ._registry import SubagentRegistry as SubagentRegistry
from ._remote import SSHRemote as SSHRemote
from ._run import SubagentProvider as SubagentProvider
from ._run import SubagentRun as SubagentRun
from ._session import SubagentSession as SubagentSession
from ._session_store import SessionRecord as SessionRecord
from ._session_store import list_records as list_records
from ._types import NO_CAPABILITIES as NO_CAPABILITIES
from ._types import Budget as Budget
from ._types import Capabilities as Capabilities
from ._types import Cost as Cost
from ._types import RunInfo as RunInfo
from ._types import SessionRequest as SessionRequest
from ._types import StopReason as StopReason
from ._types import SubagentRequest as SubagentRequest
from ._types import SubagentResult as SubagentResult
from ._types import Usage as Usage

__all__ = [
    "DIAGNOSTIC_MAX_BYTES",
    "NO_CAPABILITIES",
    "READS_POLICY",
    "Budget",
    "CancelSignal",
    "Capabilities",
    "Cost",
    "EventsDropped",
    "JobOutcome",
    "KindPolicy",
    "LocalPlacement",
    "MCPHTTPServerSpec",
    "MCPSSEServerSpec",
    "MCPServerSpec",
    "MCPStdioServerSpec",
    "MessageChunk",
    "OptionKind",
    "PermissionAsk",
    "PermissionCallback",
    "PermissionDecision",
    "PermissionEvent",
    "PermissionPolicy",
    "PermissionSetting",
    "Placement",
    "PlanEntry",
    "PlanEntryPriority",
    "PlanEntryStatus",
    "PlanEvent",
    "RunInfo",
    "SSHRemote",
    "SessionRecord",
    "SessionRequest",
    "StopReason",
    "SubagentError",
    "SubagentEvent",
    "SubagentProvider",
    "SubagentRegistry",
    "SubagentRequest",
    "SubagentResult",
    "SubagentRun",
    "SubagentSession",
    "SubagentStartError",
    "ThoughtChunk",
    "ToolCallEvent",
    "ToolCallStatus",
    "ToolKind",
    "ToolText",
    "Usage",
    "UsageEvent",
    "child_env",
    "foreground_text",
    "job_outcome",
    "list_records",
]
