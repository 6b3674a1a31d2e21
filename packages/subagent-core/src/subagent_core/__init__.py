"""subagent-core: the seam every subagent provider plugs into.

A parent builds a `SubagentRequest`, starts it through a `SubagentRegistry` by provider name,
and gets back a `SubagentRun` whose `result()` never raises for child-level failure and whose
diagnostic is safe, fixed-vocabulary text of at most 4096 UTF-8 bytes.
"""

from ._cancel import CancelSignal as CancelSignal
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
from ._presentation import JobOutcome as JobOutcome
from ._presentation import ToolText as ToolText
from ._presentation import foreground_text as foreground_text
from ._presentation import job_outcome as job_outcome
from ._process import ManagedProcess as ManagedProcess
from ._process import ProcessOutcome as ProcessOutcome
from ._process import SpawnError as SpawnError
from ._process import open_managed_process as open_managed_process
from ._registry import SubagentRegistry as SubagentRegistry
from ._run import SubagentProvider as SubagentProvider
from ._run import SubagentRun as SubagentRun
from ._run import new_run_id as new_run_id
from ._types import NO_CAPABILITIES as NO_CAPABILITIES
from ._types import Capabilities as Capabilities
from ._types import RunInfo as RunInfo
from ._types import StopReason as StopReason
from ._types import SubagentRequest as SubagentRequest
from ._types import SubagentResult as SubagentResult
from ._types import Usage as Usage

__all__ = [
    "DIAGNOSTIC_MAX_BYTES",
    "NO_CAPABILITIES",
    "CancelSignal",
    "Capabilities",
    "JobOutcome",
    "ManagedProcess",
    "ProcessOutcome",
    "RunInfo",
    "SpawnError",
    "StopReason",
    "SubagentError",
    "SubagentProvider",
    "SubagentRegistry",
    "SubagentRequest",
    "SubagentResult",
    "SubagentRun",
    "SubagentStartError",
    "ToolText",
    "Usage",
    "aborted_before_start_text",
    "bound_diagnostic",
    "child_env",
    "compose_start_error",
    "failure_line",
    "foreground_text",
    "job_outcome",
    "new_run_id",
    "open_managed_process",
    "permission_line",
    "safe_tool_kind",
]
