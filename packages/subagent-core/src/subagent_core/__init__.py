"""subagent-core: the seam every subagent provider plugs into.

A parent builds a `SubagentRequest`, starts it through a `SubagentRegistry` by provider name,
and gets back a `SubagentRun` whose `result()` never raises for child-level failure and whose
diagnostic is safe, fixed-vocabulary text of at most 4096 UTF-8 bytes.
"""

from ._bounded_text import DEFAULT_MAX_OUTPUT_BYTES as DEFAULT_MAX_OUTPUT_BYTES
from ._bounded_text import OUTPUT_TRUNCATION_MARKER as OUTPUT_TRUNCATION_MARKER
from ._bounded_text import BoundedText as BoundedText
from ._cancel import CancelSignal as CancelSignal
from ._closing import AsyncClosing as AsyncClosing
from ._command import ChildCommand as ChildCommand
from ._diagnostics import DIAGNOSTIC_MAX_BYTES as DIAGNOSTIC_MAX_BYTES
from ._diagnostics import bound_diagnostic as bound_diagnostic
from ._diagnostics import failure_line as failure_line
from ._diagnostics import permission_line as permission_line
from ._diagnostics import safe_tool_kind as safe_tool_kind
from ._environment import child_env as child_env
from ._errors import SubagentError as SubagentError
from ._errors import SubagentStartError as SubagentStartError
from ._errors import aborted_before_start_text as aborted_before_start_text
from ._errors import compose_start_error as compose_start_error
from ._events import DEFAULT_EVENT_CAPACITY as DEFAULT_EVENT_CAPACITY
from ._events import EventBuffer as EventBuffer
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
from ._events import permission_decision as permission_decision
from ._events import permission_policy as permission_policy
from ._events import plan_entry_priority as plan_entry_priority
from ._events import plan_entry_status as plan_entry_status
from ._events import tool_call_status as tool_call_status
from ._events import tool_kind as tool_kind
from ._framing import DEFAULT_MAX_FRAME_BYTES as DEFAULT_MAX_FRAME_BYTES
from ._framing import FrameTooLargeError as FrameTooLargeError
from ._framing import LineReader as LineReader
from ._mcp_servers import MCPHTTPServerSpec as MCPHTTPServerSpec
from ._mcp_servers import MCPServerSpec as MCPServerSpec
from ._mcp_servers import MCPSSEServerSpec as MCPSSEServerSpec
from ._mcp_servers import MCPStdioServerSpec as MCPStdioServerSpec
from ._owned_task import OwnedTask as OwnedTask
from ._pipe_reader import drain_ended as drain_ended
from ._presentation import JobOutcome as JobOutcome
from ._presentation import ToolText as ToolText
from ._presentation import foreground_text as foreground_text
from ._presentation import job_outcome as job_outcome
from ._process import ManagedProcess as ManagedProcess
from ._process import ProcessOutcome as ProcessOutcome
from ._process import SpawnError as SpawnError
from ._process import open_managed_process as open_managed_process
from ._registry import SubagentRegistry as SubagentRegistry
from ._remote import SSHRemote as SSHRemote
from ._run import ClosableProvider as ClosableProvider
from ._run import SubagentProvider as SubagentProvider
from ._run import SubagentRun as SubagentRun
from ._run import new_run_id as new_run_id
from ._stdio import open_stdio_streams as open_stdio_streams
from ._types import NO_CAPABILITIES as NO_CAPABILITIES
from ._types import Capabilities as Capabilities
from ._types import RunInfo as RunInfo
from ._types import StopReason as StopReason
from ._types import SubagentRequest as SubagentRequest
from ._types import SubagentResult as SubagentResult
from ._types import Usage as Usage

__all__ = [
    "DEFAULT_EVENT_CAPACITY",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DIAGNOSTIC_MAX_BYTES",
    "NO_CAPABILITIES",
    "OUTPUT_TRUNCATION_MARKER",
    "AsyncClosing",
    "BoundedText",
    "CancelSignal",
    "Capabilities",
    "ChildCommand",
    "ClosableProvider",
    "EventBuffer",
    "EventsDropped",
    "FrameTooLargeError",
    "JobOutcome",
    "LineReader",
    "MCPHTTPServerSpec",
    "MCPSSEServerSpec",
    "MCPServerSpec",
    "MCPStdioServerSpec",
    "ManagedProcess",
    "MessageChunk",
    "OwnedTask",
    "PermissionDecision",
    "PermissionEvent",
    "PermissionPolicy",
    "PlanEntry",
    "PlanEntryPriority",
    "PlanEntryStatus",
    "PlanEvent",
    "ProcessOutcome",
    "RunInfo",
    "SSHRemote",
    "SpawnError",
    "StopReason",
    "SubagentError",
    "SubagentEvent",
    "SubagentProvider",
    "SubagentRegistry",
    "SubagentRequest",
    "SubagentResult",
    "SubagentRun",
    "SubagentStartError",
    "ThoughtChunk",
    "ToolCallEvent",
    "ToolCallStatus",
    "ToolKind",
    "ToolText",
    "Usage",
    "UsageEvent",
    "aborted_before_start_text",
    "bound_diagnostic",
    "child_env",
    "compose_start_error",
    "drain_ended",
    "failure_line",
    "foreground_text",
    "job_outcome",
    "new_run_id",
    "open_managed_process",
    "open_stdio_streams",
    "permission_decision",
    "permission_line",
    "permission_policy",
    "plan_entry_priority",
    "plan_entry_status",
    "safe_tool_kind",
    "tool_call_status",
    "tool_kind",
]
