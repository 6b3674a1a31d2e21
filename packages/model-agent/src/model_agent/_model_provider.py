"""The in-process `model` provider: a child `Agent` behind the subagent-core seam.

So the registry and the presentation helpers serve an in-process child like any other
provider. Unlike out-of-process providers it can enforce two gated request fields:

- `depth_limit`: a child always runs at depth 1 and is never offered `subagent_delegate`, so
  every `max_depth` (0 or more) holds;
- `tool_filter`: the child is offered only the named tools, intersected with what its config
  allows (never wider).

`output_schema` and `persona` are not honoured (the registry refuses them). The child does not
see the parent's conversation (`inherits_parent_context` is False).

The child runs in the task that awaits `result()` (one owner, no background task). Status
mapping: completed → `completed`, max-tokens → `max-tokens`, refusal → `refusal`, step-limit
and failed → `error`, cancelled → `aborted`. The diagnostic is always `None`: model and HTTP error text is not safe.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Protocol

import anyio
from subagent_core import (
    CancelSignal,
    Capabilities,
    StopReason,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentStartError,
    failure_line,
    new_run_id,
)

from ._config import AgentConfig
from ._events import AgentObserver

if TYPE_CHECKING:
    from ._agent import AgentResult

MODEL_PROVIDER = "model"

MODEL_CAPABILITIES = Capabilities(depth_limit=True, tool_filter=True)
"""What the `model` provider enforces: depth and tool narrowing, nothing else."""

ABORTED_BEFORE_START_TEXT = "subagent request was aborted before the model child started"

DISPOSE_WAIT_SECONDS = 30.0
"""How long `dispose()` waits for a running child to wind down after it was told to stop."""

_STOP_REASONS: dict[str, StopReason] = {
    "completed": "completed",
    "max-tokens": "max-tokens",
    "step-limit": "error",
    "failed": "error",
    "cancelled": "aborted",
    "refusal": "refusal",
}


def stop_reason_of(status: str) -> StopReason:
    """The seam's stop reason for an `AgentResult.status` (unknown values are errors)."""
    return _STOP_REASONS.get(status, "error")


def child_config(config: AgentConfig, request: SubagentRequest) -> AgentConfig:
    """The child's config: depth 1, tools narrowed by `request.tool_filter`, cwd applied."""
    tools = config.tools
    if request.tool_filter is not None:
        wanted = tuple(dict.fromkeys(request.tool_filter))
        tools = wanted if tools is None else tuple(name for name in wanted if name in tools)
    workspace = config.workspace if request.cwd is None else request.cwd
    return dataclasses.replace(config, depth=1, tools=tools, workspace=workspace)


class ModelProvider:
    """Runs each child as an in-process `Agent` built from `config` (see the module doc)."""

    def __init__(self, config: AgentConfig, *, observer: AgentObserver | None = None) -> None:
        self._config = config
        self._observer = observer

    @property
    def name(self) -> str:
        return MODEL_PROVIDER

    @property
    def capabilities(self) -> Capabilities:
        return MODEL_CAPABILITIES

    @property
    def inherits_parent_context(self) -> bool:
        return False

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Builds the child agent; nothing runs until `result()` is awaited.

        Raises:
            SubagentStartError: the request was already cancelled (nothing was started).
        """
        if request.cancel.cancelled:
            raise SubagentStartError(ABORTED_BEFORE_START_TEXT)
        from ._agent import Agent

        agent = Agent(child_config(self._config, request), observer=self._observer)
        return ModelRun(agent, request.prompt, request.cancel)


class ChildAgent(Protocol):
    """What a `ModelRun` drives: the `Agent.run` surface."""

    async def run(self, prompt: str, cancel: CancelSignal) -> AgentResult: ...


class ModelRun(SubagentRun):
    """One in-process child: the caller of `result()` drives it; `dispose()` stops it."""

    def __init__(self, agent: ChildAgent, prompt: str, cancel: CancelSignal) -> None:
        self.id = new_run_id()
        self._agent = agent
        self._prompt = prompt
        self._request_cancel = cancel
        self._stop = CancelSignal()
        self._settled: SubagentResult | None = None
        self._driving = False
        self._finished = anyio.Event()
        self._dispose_lock = anyio.Lock()
        self._disposed = False
        self._dispose_outcome: str | None = None

    async def result(self) -> SubagentResult:
        """Runs the child once (memoized); never raises for child-level failure."""
        if self._settled is not None:
            return self._settled
        if self._driving:
            await self._finished.wait()
            assert self._settled is not None
            return self._settled
        self._driving = True
        try:
            if self._request_cancel.cancelled or self._stop.cancelled:
                self._settle(SubagentResult(stop_reason="aborted"))
            else:
                self._settle(await self._drive())
        finally:
            # A cancelled caller still leaves a settled run behind.
            self._settle(SubagentResult(stop_reason="aborted"))
            self._finished.set()
        assert self._settled is not None
        return self._settled

    async def _drive(self) -> SubagentResult:
        outcome: AgentResult | None = None
        async with anyio.create_task_group() as link:

            async def forward_cancel() -> None:
                await self._request_cancel.wait()
                self._stop.cancel()

            link.start_soon(forward_cancel)
            outcome = await self._agent.run(self._prompt, self._stop)
            link.cancel_scope.cancel()
        assert outcome is not None
        return SubagentResult(
            stop_reason=stop_reason_of(outcome.status),
            output=outcome.output,
            diagnostic=None,
            usage=outcome.usage,
        )

    def _settle(self, result: SubagentResult) -> None:
        if self._settled is None:
            self._settled = result

    async def dispose(self) -> str | None:
        """Stops the child and waits (bounded) for it to wind down; memoized, never raises."""
        with anyio.CancelScope(shield=True):
            async with self._dispose_lock:
                if self._disposed:
                    return self._dispose_outcome
                self._disposed = True
                self._stop.cancel()
                if self._driving:
                    with anyio.move_on_after(DISPOSE_WAIT_SECONDS):
                        await self._finished.wait()
                    if not self._finished.is_set():
                        self._dispose_outcome = failure_line(MODEL_PROVIDER, "teardown", "unknown")
                self._settle(SubagentResult(stop_reason="aborted"))
        return self._dispose_outcome
