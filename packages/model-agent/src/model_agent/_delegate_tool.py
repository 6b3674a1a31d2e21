"""`subagent_delegate`: hand a task to an in-process child agent (depth 1, never wider).

States of one call:

    validating → (invalid or depth exceeded → failed) → queued → (parent cancelled → cancelled)
      → running → model done → completed | child failure → failed (partial output kept) |
      timeout → cancelled | parent cancel → cancelled

The child runs through the `model` provider (only it can honour depth and tool narrowing),
admitted by the process-wide queue (3 running, 32 waiting). It inherits the parent request's
snapshot: the same mode, runtime, space, workspace, frozen shell and model endpoint, and a
subset of the parent's tools without `subagent_delegate`. Failures and cancels are results;
only a broken internal contract raises.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import anyio
from subagent_core import (
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
    foreground_text,
)

from ._activity import ActivityEntry
from ._config import AgentConfig
from ._delegate_children import (
    CHILDREN_SCHEMA,
    InvalidChildrenError,
    child_arguments,
    run_children,
)
from ._delegate_queue import DelegateQueue, QueueFullError, delegate_queue
from ._events import AgentEvent, ChildEnded, ChildEvent, ChildStarted, ToolEnded, ToolStarted
from ._model_run import MODEL_PROVIDER, ChildAgentFactory, ChildProvider
from ._tool import RequestContext, ToolOutcome

SUBAGENT_DELEGATE = "subagent_delegate"

DelegateStatus = Literal["completed", "failed", "cancelled"]

CANCELLED_TEXT = "subagent run was cancelled"
CANCELLED_BEFORE_START_TEXT = "subagent run was cancelled before it started"

_DESCRIPTION = (
    "Delegate a self-contained task to a child agent that works in the same workspace with "
    "the same mode and a subset of your tools (it cannot delegate further). It does not see "
    "this conversation: put everything it needs in `task`. Returns the child's final answer. "
    "To run several independent tasks at once, pass `children` (a list of {task, description, "
    "tools?}) instead; you get one result per child, in order. Children share this workspace "
    "and its rules (no separate copies or worktrees): give children that write files "
    "disjoint files."
)

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "description": "The complete instructions for the child."},
        "description": {"type": "string", "description": "A short label (3-7 words)."},
        "tools": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Optional subset of your tool names the child may use (default: all "
            "of yours except subagent_delegate).",
        },
        "children": CHILDREN_SCHEMA,
    },
    # Either task + description, or children: checked by the tool (a top-level oneOf is not
    # accepted by every function-calling API).
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class DelegateArguments:
    """Validated arguments of one call."""

    task: str
    description: str
    tools: tuple[str, ...] | None


class InvalidDelegateArgumentsError(ValueError):
    """The model's arguments are refused; the message is fixed text."""


def parse_delegate_arguments(
    arguments: Mapping[str, Any], snapshot: Sequence[str]
) -> DelegateArguments:
    """Validates `task`, `description` and `tools` against the parent's tool snapshot.

    Raises:
        InvalidDelegateArgumentsError: the arguments are not acceptable.
    """
    if set(arguments) - {"task", "description", "tools"}:
        raise InvalidDelegateArgumentsError(
            "invalid arguments: unknown argument(s); allowed: task, description, tools"
        )
    task = arguments.get("task")
    if not isinstance(task, str) or not task.strip():
        raise InvalidDelegateArgumentsError("invalid arguments: `task` must be a non-empty string")
    description = arguments.get("description")
    if not isinstance(description, str) or not description.strip():
        raise InvalidDelegateArgumentsError(
            "invalid arguments: `description` must be a non-empty string"
        )
    raw_tools = arguments.get("tools")
    if raw_tools is None:
        return DelegateArguments(task, description.strip(), None)
    if not isinstance(raw_tools, list) or not all(
        isinstance(name, str) for name in cast(list[Any], raw_tools)
    ):
        raise InvalidDelegateArgumentsError(
            "invalid arguments: `tools` must be a list of tool names"
        )
    names = tuple(dict.fromkeys(cast(list[str], raw_tools)))
    if SUBAGENT_DELEGATE in names:
        raise InvalidDelegateArgumentsError(
            "invalid arguments: a child cannot be given subagent_delegate"
        )
    if any(name not in snapshot for name in names):
        raise InvalidDelegateArgumentsError(
            "invalid arguments: `tools` may only name tools this request has"
        )
    return DelegateArguments(task, description.strip(), names)


def delegate_result(
    status: str, output: str, *, error: str | None = None, result: SubagentResult | None = None
) -> str:
    """The model-facing JSON: `{status, output, error?, modelUsage?}`.

    `modelUsage` carries the child's token counts (`inputTokens`, `outputTokens`,
    `cachedInputTokens`, each when reported), so the parent model can see what it spent.
    """
    data: dict[str, Any] = {"status": status, "output": output}
    if error is not None:
        data["error"] = error
    usage = None if result is None else result.usage
    if usage is not None:
        counts: dict[str, int] = {}
        if usage.input_tokens is not None:
            counts["inputTokens"] = usage.input_tokens
        if usage.output_tokens is not None:
            counts["outputTokens"] = usage.output_tokens
        if usage.cached_input_tokens is not None:
            counts["cachedInputTokens"] = usage.cached_input_tokens
        data["modelUsage"] = counts
    return json.dumps(data, ensure_ascii=False)


def delegate_status(result: SubagentResult) -> DelegateStatus:
    """`completed`, `cancelled` (a local cancel: aborted without diagnostic) or `failed`."""
    if result.stop_reason == "completed":
        return "completed"
    if result.stop_reason == "aborted" and result.diagnostic is None:
        return "cancelled"
    return "failed"


def outcome_of(result: SubagentResult, *, timed_out_after: float | None = None) -> ToolOutcome:
    """Maps a child's `SubagentResult` to the tool result the parent model sees.

    `completed` → completed; `aborted` without a diagnostic → cancelled; anything else → failed
    with `error` = the `foreground_text` headline plus `\\nDiagnostic: <d>` when present.
    """
    status = delegate_status(result)
    usage = result.usage
    if status == "completed":
        return ToolOutcome(delegate_result("completed", result.output, result=result), usage=usage)
    if status == "cancelled":
        error = CANCELLED_TEXT
        if timed_out_after is not None:
            error = f"{CANCELLED_TEXT}: it exceeded its {timed_out_after:g} s timeout"
        return ToolOutcome(
            delegate_result("cancelled", result.output, error=error, result=result),
            is_error=True,
            usage=usage,
        )
    # The headline and diagnostic only: the partial output travels in `output`, kept apart.
    error = foreground_text(dataclasses.replace(result, output="")).text
    return ToolOutcome(
        delegate_result("failed", result.output, error=error, result=result),
        is_error=True,
        usage=usage,
    )


class SubagentDelegateTool:
    """The `subagent_delegate` tool of one agent (`config` is the parent's config).

    `agent_factory` builds each child agent (the parent `Agent` passes its own class, so this
    module never imports the loop that offers it); `queue` is the admission every child
    passes (default: the process-wide one).
    """

    name = SUBAGENT_DELEGATE
    description = _DESCRIPTION
    parameters: Mapping[str, Any] = _PARAMETERS

    def __init__(
        self,
        config: AgentConfig,
        *,
        agent_factory: ChildAgentFactory,
        queue: DelegateQueue | None = None,
    ) -> None:
        self._config = config
        self._agent_factory = agent_factory
        self._queue = queue if queue is not None else delegate_queue()
        self._timeout = config.delegate_timeout_seconds

    async def call(self, arguments: Mapping[str, Any], context: RequestContext) -> ToolOutcome:
        """Validates, queues, runs and reports one child (or each of `children` at once).

        Never raises for child failure.
        """
        refusal = _gate(context)
        if refusal is not None:
            return _failed(refusal)
        try:
            entries = child_arguments(arguments)
            # Every entry is checked before any child starts.
            children = [
                parse_delegate_arguments(entry, context.tool_names)
                for entry in (entries if entries is not None else [arguments])
            ]
        except (InvalidDelegateArgumentsError, InvalidChildrenError) as error:
            return _failed(str(error))
        if entries is None:
            return await self._admit(children[0], context)
        return await run_children(children, lambda child: self._admit(child, context))

    async def _admit(self, parsed: DelegateArguments, context: RequestContext) -> ToolOutcome:
        """Waits for a slot in the queue, then runs the child; a full queue fails the call."""
        try:
            async with self._queue.slot(context.cancel) as admitted:
                if not admitted or context.cancel.cancelled:
                    return _cancelled_before_start()
                return await self._run_child(parsed, context)
        except QueueFullError as error:
            return _failed(str(error))

    def child_base_config(self, context: RequestContext) -> AgentConfig:
        """The parent request's snapshot as a child config (the provider narrows it further)."""
        inherited = tuple(name for name in context.tool_names if name != SUBAGENT_DELEGATE)
        return dataclasses.replace(
            self._config,
            runtime=context.runtime,
            mode=context.mode,
            space=context.space,
            workspace=context.workspace,
            depth=1,
            tools=inherited,
            approve=self._config.approve if self._config.approve_child_actions else None,
            shell_candidates=() if context.shell is None else (context.shell,),
            # The child shares the parent's MCP sessions: it never starts a server itself.
            mcp_servers=(),
            mcp_tools=context.mcp_tools,
            # The parent's answer format is the parent's: a child answers its own task freely.
            output_schema=None,
        )

    async def _run_child(self, parsed: DelegateArguments, context: RequestContext) -> ToolOutcome:
        # The parent's cancel reaches the child by the link; the timeout cancels it alone.
        child_cancel = context.cancel.child()
        child_id = ""
        arguments: dict[str, str] = {}

        def forward(event: AgentEvent) -> None:
            # The parent's observer follows the child live, and its activity record keeps the
            # child's tool calls (both gated like every parent event).
            if isinstance(event, ChildStarted | ChildEnded | ChildEvent):
                return
            context.emit(ChildEvent(child_id, event))
            if isinstance(event, ToolStarted):
                arguments[event.call_id] = event.arguments
            elif isinstance(event, ToolEnded):
                context.record(
                    ActivityEntry(
                        kind="child-tool",
                        child_id=child_id,
                        call_id=event.call_id,
                        name=event.name,
                        arguments=arguments.pop(event.call_id, None),
                        text=event.content,
                        is_error=event.is_error,
                    )
                )

        registry = SubagentRegistry()
        registry.register(
            ChildProvider(
                self.child_base_config(context),
                agent_factory=self._agent_factory,
                observer=forward,
            )
        )
        request = SubagentRequest(
            prompt=parsed.task,
            cwd=context.workspace,
            cancel=child_cancel,
            label=parsed.description,
            max_depth=0,
            tool_filter=parsed.tools,
            # Only an Execute parent lets its child change the workspace.
            allow_writes=context.mode == "execute",
        )
        try:
            run = await registry.start(MODEL_PROVIDER, request)
        except SubagentStartError:
            return _cancelled_before_start()
        child_id = run.id
        async with run:
            context.emit(ChildStarted(run.id, parsed.description))
            context.record(
                ActivityEntry(kind="child-started", child_id=run.id, name=parsed.description)
            )
            result: SubagentResult | None = None
            with anyio.move_on_after(self._timeout):
                result = await run.result()
            timed_out = result is None
            if result is None:
                child_cancel.cancel()
                result = await run.result()
        # Parent cancel outranks the timeout when both happened.
        timeout = self._timeout if timed_out and not context.cancel.cancelled else None
        outcome = outcome_of(result, timed_out_after=timeout)
        status = delegate_status(result)
        context.emit(ChildEnded(run.id, parsed.description, status))
        context.record(
            ActivityEntry(
                kind="child-ended",
                child_id=run.id,
                name=parsed.description,
                status=status,
                text=result.output,
            )
        )
        return outcome


def _failed(error: str) -> ToolOutcome:
    """A call that ended `failed` before any child ran (invalid, refused, queue full)."""
    return ToolOutcome(delegate_result("failed", "", error=error), is_error=True)


def _cancelled_before_start() -> ToolOutcome:
    return ToolOutcome(
        delegate_result("cancelled", "", error=CANCELLED_BEFORE_START_TEXT), is_error=True
    )


def _gate(context: RequestContext) -> str | None:
    """Re-checks the request on every call: hiding a tool is not authorization."""
    if context.runtime != "model":
        return "subagent_delegate refused: only the direct model runtime has this tool"
    if context.space != "local":
        return "subagent_delegate refused: not available in this execution space"
    if context.depth >= 1:
        return "subagent_delegate refused: a delegated child cannot delegate (maximum depth is 1)"
    if SUBAGENT_DELEGATE not in context.tool_names:
        return "subagent_delegate refused: the tool is not enabled for this request"
    if context.state != "active" or context.cancel.cancelled:
        return "subagent_delegate refused: the request is no longer active"
    return None
