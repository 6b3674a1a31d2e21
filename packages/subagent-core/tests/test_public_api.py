"""The public surface: `__all__` is exactly the public names, sorted the way ruff sorts it."""

from __future__ import annotations

import inspect

import subagent_core


def _isort_key(name: str) -> tuple[int, str]:
    # RUF022 order: SCREAMING_CASE constants, then CamelCase classes, then everything else.
    if name.isupper():
        return (0, name)
    if name[0].isupper():
        return (1, name)
    return (2, name)


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(subagent_core).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert set(subagent_core.__all__) == public
    assert len(subagent_core.__all__) == len(public)


def test_all_is_sorted() -> None:
    assert subagent_core.__all__ == sorted(subagent_core.__all__, key=_isort_key)


def test_the_binding_spec_names_are_exported() -> None:
    spec_names = {
        "CancelSignal",
        "SubagentRequest",
        "SubagentResult",
        "Usage",
        "Capabilities",
        "NO_CAPABILITIES",
        "SubagentRun",
        "SubagentProvider",
        "SubagentRegistry",
        "SubagentError",
        "SubagentStartError",
        "StopReason",
        "RunInfo",
        "compose_start_error",
        "aborted_before_start_text",
        "failure_line",
        "permission_line",
        "safe_tool_kind",
        "bound_diagnostic",
        "child_env",
        "foreground_text",
        "job_outcome",
        "ToolText",
        "JobOutcome",
        "new_run_id",
        "open_managed_process",
        "ManagedProcess",
        "ProcessOutcome",
        "SpawnError",
    }
    assert spec_names <= set(subagent_core.__all__)


def test_the_shared_mechanisms_and_event_names_are_exported() -> None:
    names = {
        "DEFAULT_MAX_FRAME_BYTES",
        "FrameTooLargeError",
        "LineReader",
        "open_stdio_streams",
        "OwnedTask",
        "ChildCommand",
        "SubagentEvent",
        "MessageChunk",
        "ThoughtChunk",
        "ToolCallEvent",
        "PlanEvent",
        "PlanEntry",
        "PermissionEvent",
        "UsageEvent",
        "EventsDropped",
        "EventBuffer",
    }
    assert names <= set(subagent_core.__all__)
