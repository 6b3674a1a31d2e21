"""The two public faces, pinned: `subagent_core` for users of providers, `subagent_core.kit`
for provider authors. Each `__all__` is exactly its public names, sorted the way ruff sorts
it, and no name is in both (a mechanism has one home)."""

from __future__ import annotations

import inspect
from types import ModuleType

import pytest
import subagent_core
import subagent_core.kit

USER_FACE = [
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

KIT_FACE = [
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


def _isort_key(name: str) -> tuple[int, str]:
    # RUF022 order: SCREAMING_CASE constants, then CamelCase classes, then everything else.
    if name.isupper():
        return (0, name)
    if name[0].isupper():
        return (1, name)
    return (2, name)


@pytest.mark.parametrize("module", [subagent_core, subagent_core.kit])
def test_all_lists_exactly_the_public_names(module: ModuleType) -> None:
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert set(module.__all__) == public
    assert len(module.__all__) == len(public)


@pytest.mark.parametrize("module", [subagent_core, subagent_core.kit])
def test_all_is_sorted(module: ModuleType) -> None:
    assert module.__all__ == sorted(module.__all__, key=_isort_key)


def test_the_user_face_is_pinned() -> None:
    assert subagent_core.__all__ == USER_FACE


def test_the_kit_face_is_pinned() -> None:
    assert subagent_core.kit.__all__ == KIT_FACE


def test_no_name_lives_in_both_faces() -> None:
    assert set(USER_FACE).isdisjoint(KIT_FACE)


@pytest.mark.parametrize(
    "name",
    [
        "LineReader",
        "OwnedTask",
        "drain_ended",
        "open_managed_process",
        "compose_start_error",
        "EventBuffer",
        "failure_line",
    ],
)
def test_kit_names_are_not_aliased_at_the_top(name: str) -> None:
    assert not hasattr(subagent_core, name)
