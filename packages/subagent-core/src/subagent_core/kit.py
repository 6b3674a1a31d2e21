"""subagent-core's provider-author face: what writing a provider takes and using one does not.

Users of providers import `subagent_core`; authors of providers (the ACP, SDK, Claude and Codex
providers here, or a new one) also import this module for the shared mechanisms, so each has one
home:

- framing and stdio: `LineReader`, `FrameTooLargeError`, `open_stdio_streams`, `drain_ended`;
- processes and containment: `open_managed_process`, `ManagedProcess`, `ProcessOutcome`,
  `ChildChannel` and `open_channel_process` (for placements that reach a guard their own way),
  `SpawnError`, `ChildCommand`;
- tasks and closing: `OwnedTask`, `AsyncClosing` and `Closing`, `ClosableProvider`;
- a child's waiter: `ChildWatch` and `watching_child` (its exit and the session's idle check,
  one task for the child's whole life, shared by a warm pool and the session that adopts it);
- safe text: `failure_line`, `permission_line`, `bound_diagnostic`, `safe_tool_kind`,
  `compose_start_error`, `aborted_before_start_text`, `BoundedText`;
- events: `EventBuffer` and the normalisers that force child values into closed sets;
- permission: `check_permission`, `PermissionGate`, `fixed_policy`;
- deadlines: `check_timeout`, `IdleDeadline` and the defaults;
- checked values: `safe_cost`, `parse_structured_output`;
- the lifecycle: `ChildSession` (one child's life in one owner task, for one turn or many),
  the hooks a provider writes (`ChildProtocol`, `TurnDriver`), what they see and report
  (`ChildLink`, `Turn`, `ChildFailure`), the published handle (`TurnRun`), the child's pipes
  with the bounds its wire keeps (`ChildPipes`);
- the registry face: `ChildProvider` (name, the capabilities it offers, the workspace checks,
  one session hook `open_turns`), `WarmProvider` over a `WarmPool` of `WarmChild`ren, sessions
  as `ChildTurns` over a `SlotSession`;
- configs: `ChildBounds` (the bounds every child config declares), `check_child_config` (the
  shared fields checked once), `ChildSession.configured`;
- failure facts: `Failure`, `result_diagnostic`, `teardown_line`, `Teardown` (the ladder's
  graces as one value);
- before a spawn: `start_preamble`, `configuration_start_error`, `choose_workspace`,
  `enterable_directory`;
- tracing: `traceparent` (the W3C context a child can join), `otel_env` (the `OTEL_*`
  settings a config's `otel_passthrough` gives its child).
"""

from ._bounded_text import DEFAULT_MAX_OUTPUT_BYTES as DEFAULT_MAX_OUTPUT_BYTES
from ._bounded_text import OUTPUT_TRUNCATION_MARKER as OUTPUT_TRUNCATION_MARKER
from ._bounded_text import BoundedText as BoundedText
from ._channel import ChildChannel as ChildChannel
from ._child_config import DEFAULT_WRITE_TIMEOUT_SECONDS as DEFAULT_WRITE_TIMEOUT_SECONDS
from ._child_config import ChildBounds as ChildBounds
from ._child_config import ChildConfigFields as ChildConfigFields
from ._child_config import GatedConfigFields as GatedConfigFields
from ._child_config import check_child_config as check_child_config
from ._child_config import check_provider_name as check_provider_name
from ._child_config import checked_command as checked_command
from ._child_config import teardown_of as teardown_of
from ._child_pipes import ChildPipes as ChildPipes
from ._child_protocol import CLOSE_SECONDS as CLOSE_SECONDS
from ._child_protocol import INTERRUPT_SECONDS as INTERRUPT_SECONDS
from ._child_protocol import OUTCOME_WAIT_SECONDS as OUTCOME_WAIT_SECONDS
from ._child_protocol import ChildFailure as ChildFailure
from ._child_protocol import ChildLink as ChildLink
from ._child_protocol import ChildProtocol as ChildProtocol
from ._child_provider import ChildProvider as ChildProvider
from ._child_provider import WarmProvider as WarmProvider
from ._child_session import ChildSession as ChildSession
from ._child_watch import ChildWatch as ChildWatch
from ._child_watch import watching_child as watching_child
from ._closing import AsyncClosing as AsyncClosing
from ._closing import Closing as Closing
from ._command import ChildCommand as ChildCommand
from ._deadlines import DEFAULT_IDLE_TIMEOUT_SECONDS as DEFAULT_IDLE_TIMEOUT_SECONDS
from ._deadlines import DEFAULT_STARTUP_TIMEOUT_SECONDS as DEFAULT_STARTUP_TIMEOUT_SECONDS
from ._deadlines import IdleDeadline as IdleDeadline
from ._deadlines import check_timeout as check_timeout
from ._diagnostics import ACP_TOOL_KINDS as ACP_TOOL_KINDS
from ._diagnostics import FailureCategory as FailureCategory
from ._diagnostics import PermissionProtocol as PermissionProtocol
from ._diagnostics import bound_diagnostic as bound_diagnostic
from ._diagnostics import failure_line as failure_line
from ._diagnostics import permission_line as permission_line
from ._diagnostics import safe_tool_kind as safe_tool_kind
from ._environment import otel_env as otel_env
from ._errors import ChildKind as ChildKind
from ._errors import aborted_before_start_text as aborted_before_start_text
from ._errors import compose_start_error as compose_start_error
from ._events import DEFAULT_EVENT_CAPACITY as DEFAULT_EVENT_CAPACITY
from ._events import EventBuffer as EventBuffer
from ._events import permission_decision as permission_decision
from ._events import permission_policy as permission_policy
from ._events import plan_entry_priority as plan_entry_priority
from ._events import plan_entry_status as plan_entry_status
from ._events import tool_call_status as tool_call_status
from ._events import tool_kind as tool_kind
from ._failure import Failure as Failure
from ._failure import result_diagnostic as result_diagnostic
from ._failure import teardown_line as teardown_line
from ._framing import DEFAULT_MAX_FRAME_BYTES as DEFAULT_MAX_FRAME_BYTES
from ._framing import FrameTooLargeError as FrameTooLargeError
from ._framing import LineReader as LineReader
from ._open import open_managed_process as open_managed_process
from ._owned_task import OwnedTask as OwnedTask
from ._permission import ALLOW_KINDS as ALLOW_KINDS
from ._permission import OPTION_KINDS as OPTION_KINDS
from ._permission import REFUSED_DECISIONS as REFUSED_DECISIONS
from ._permission import REJECT_KINDS as REJECT_KINDS
from ._permission import PermissionGate as PermissionGate
from ._permission import check_permission as check_permission
from ._permission import fixed_policy as fixed_policy
from ._pipe_reader import drain_ended as drain_ended
from ._placement import open_channel_process as open_channel_process
from ._process import ManagedProcess as ManagedProcess
from ._process import ProcessOutcome as ProcessOutcome
from ._process import SpawnError as SpawnError
from ._run import ClosableProvider as ClosableProvider
from ._run import new_run_id as new_run_id
from ._session import ChildTurns as ChildTurns
from ._session import SessionProvider as SessionProvider
from ._session import SlotSession as SlotSession
from ._session import session_workspace as session_workspace
from ._session_store import SessionBusyError as SessionBusyError
from ._session_store import SessionSlot as SessionSlot
from ._stderr_log import DEFAULT_CHILD_STDERR_BYTES as DEFAULT_CHILD_STDERR_BYTES
from ._stderr_log import ChildStderr as ChildStderr
from ._stderr_log import StderrLog as StderrLog
from ._stderr_log import drain_stderr as drain_stderr
from ._stdio import open_stdio_streams as open_stdio_streams
from ._structured import StructuredOutputError as StructuredOutputError
from ._structured import parse_structured_output as parse_structured_output
from ._structured import safe_cost as safe_cost
from ._teardown import Teardown as Teardown
from ._tracing import traceparent as traceparent
from ._tracing import workflow_span as workflow_span
from ._turn import Turn as Turn
from ._turn import TurnDriver as TurnDriver
from ._turn import TurnRun as TurnRun
from ._types import add_usage as add_usage
from ._warm_pool import WarmChild as WarmChild
from ._warm_pool import WarmPool as WarmPool
from ._workspace import choose_workspace as choose_workspace
from ._workspace import configuration_start_error as configuration_start_error
from ._workspace import enterable_directory as enterable_directory
from ._workspace import start_preamble as start_preamble

__all__ = [
    "ACP_TOOL_KINDS",
    "ALLOW_KINDS",
    "CLOSE_SECONDS",
    "DEFAULT_CHILD_STDERR_BYTES",
    "DEFAULT_EVENT_CAPACITY",
    "DEFAULT_IDLE_TIMEOUT_SECONDS",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_STARTUP_TIMEOUT_SECONDS",
    "DEFAULT_WRITE_TIMEOUT_SECONDS",
    "INTERRUPT_SECONDS",
    "OPTION_KINDS",
    "OUTCOME_WAIT_SECONDS",
    "OUTPUT_TRUNCATION_MARKER",
    "REFUSED_DECISIONS",
    "REJECT_KINDS",
    "AsyncClosing",
    "BoundedText",
    "ChildBounds",
    "ChildChannel",
    "ChildCommand",
    "ChildConfigFields",
    "ChildFailure",
    "ChildKind",
    "ChildLink",
    "ChildPipes",
    "ChildProtocol",
    "ChildProvider",
    "ChildSession",
    "ChildStderr",
    "ChildTurns",
    "ChildWatch",
    "ClosableProvider",
    "Closing",
    "EventBuffer",
    "Failure",
    "FailureCategory",
    "FrameTooLargeError",
    "GatedConfigFields",
    "IdleDeadline",
    "LineReader",
    "ManagedProcess",
    "OwnedTask",
    "PermissionGate",
    "PermissionProtocol",
    "ProcessOutcome",
    "SessionBusyError",
    "SessionProvider",
    "SessionSlot",
    "SlotSession",
    "SpawnError",
    "StderrLog",
    "StructuredOutputError",
    "Teardown",
    "Turn",
    "TurnDriver",
    "TurnRun",
    "WarmChild",
    "WarmPool",
    "WarmProvider",
    "aborted_before_start_text",
    "add_usage",
    "bound_diagnostic",
    "check_child_config",
    "check_permission",
    "check_provider_name",
    "check_timeout",
    "checked_command",
    "choose_workspace",
    "compose_start_error",
    "configuration_start_error",
    "drain_ended",
    "drain_stderr",
    "enterable_directory",
    "failure_line",
    "fixed_policy",
    "new_run_id",
    "open_channel_process",
    "open_managed_process",
    "open_stdio_streams",
    "otel_env",
    "parse_structured_output",
    "permission_decision",
    "permission_line",
    "permission_policy",
    "plan_entry_priority",
    "plan_entry_status",
    "result_diagnostic",
    "safe_cost",
    "safe_tool_kind",
    "session_workspace",
    "start_preamble",
    "teardown_line",
    "teardown_of",
    "tool_call_status",
    "tool_kind",
    "traceparent",
    "watching_child",
    "workflow_span",
]
