"""The in-process `model` provider's machinery: a child agent behind the subagent-core seam.

So the registry and the presentation helpers serve an in-process child like any other
provider. Unlike out-of-process providers it can enforce two gated request fields:

- `depth_limit`: a child always runs at depth 1 and is never offered `subagent_delegate`, so
  every `max_depth` (0 or more) holds;
- `tool_filter`: the child is offered only the named tools, intersected with what its config
  allows (never wider).

- `output_schema`: the child asks its endpoint for JSON, checks the answer with `jsonschema`
  and retries a non-validating one once; a `completed` result carries the parsed value in
  `structured_output`, and a second failure ends `error` with
  `Subagent failure (provider: model; stage: answer; category: output-schema)`.

`persona` is not honoured (the registry refuses it). The child does not see the parent's
conversation (`inherits_parent_context` is False). A request's `Budget` is counted against the
usage the child's model requests report as they come: the report that crosses it settles the
run `error` with `Subagent failure (provider: model; stage: answer; category: budget)` and
stops the child before its next request. Sessions (several turns, resume) are
`ModelProvider`'s (`_model_session`); the one-shot provider here also serves delegated children.

The child agent comes from an injected factory (`ChildAgentFactory`), so this module never
imports the agent loop that uses it (the loop's delegate tool builds providers from here).
The child runs in an `OwnedTask` the run holds: `result()` settles `aborted` at once on a local
cancel, and `dispose()` awaits the child's wind-down, bounded. Status mapping: completed →
`completed`, max-tokens → `max-tokens`, refusal → `refusal`, step-limit and failed → `error`,
cancelled → `aborted`. The diagnostic is `None` except for the output-schema failure: model and
HTTP error text is not safe.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
from collections.abc import Sequence
from typing import Any, Protocol

import anyio
from subagent_core import (
    Budget,
    CancelSignal,
    Capabilities,
    StopReason,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentStartError,
    Usage,
    UsageEvent,
)
from subagent_core.kit import EventBuffer, OwnedTask, failure_line, new_run_id

from ._child_events import core_event
from ._config import AgentConfig
from ._events import AgentEvent, AgentObserver, TextDelta, ToolStarted
from ._history import ChatMessage
from ._result import OUTPUT_SCHEMA_ERROR, AgentResult
from ._usage import UsageObserver

_log = logging.getLogger("model_agent")

MODEL_PROVIDER = "model"

ONE_SHOT_CAPABILITIES = Capabilities(output_schema=True, depth_limit=True, tool_filter=True)
"""What every `model` child enforces: structured output, depth and tool narrowing."""

MODEL_CAPABILITIES = dataclasses.replace(ONE_SHOT_CAPABILITIES, sessions=True, resume=True)
"""What `ModelProvider` enforces: the above, and sessions kept in the conversation history
(live, and resumed from the stored history)."""

ANSWER_STAGE = "answer"
"""The stage every failure of a `model` child's turn names."""

OUTPUT_SCHEMA_DIAGNOSTIC = failure_line(MODEL_PROVIDER, ANSWER_STAGE, "output-schema")
"""The diagnostic of a child whose answer failed the output schema after its one retry."""

BUDGET_DIAGNOSTIC = failure_line(MODEL_PROVIDER, ANSWER_STAGE, "budget")
"""The diagnostic of a run whose reported usage crossed its request's `Budget`."""

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
    """The child's config: depth 1, tools narrowed by `request.tool_filter`, cwd and
    `request.output_schema` applied."""
    tools = config.tools
    if request.tool_filter is not None:
        wanted = tuple(dict.fromkeys(request.tool_filter))
        tools = wanted if tools is None else tuple(name for name in wanted if name in tools)
    workspace = config.workspace if request.cwd is None else request.cwd
    return dataclasses.replace(
        config,
        depth=1,
        tools=tools,
        workspace=workspace,
        output_schema=request.output_schema,
    )


class ChildAgent(Protocol):
    """What a `ModelRun` or a session turn drives: the `Agent.run` surface."""

    async def run(
        self,
        prompt: str,
        cancel: CancelSignal,
        *,
        history: Sequence[ChatMessage] | None = None,
        on_usage: UsageObserver | None = None,
    ) -> AgentResult:
        """Works on `prompt` until an outcome; never raises for model or tool failure.

        A one-shot run passes neither keyword (`on_usage` only when it has a budget); a session
        turn passes the conversation so far as `history`.
        """
        ...


class ChildAgentFactory(Protocol):
    """Builds the child agent of one run (`model_agent.Agent` itself fits)."""

    def __call__(self, config: AgentConfig, *, observer: AgentObserver) -> ChildAgent:
        """A child agent for `config` whose events go to `observer`."""
        ...


class ChildProvider:
    """The `model` provider: each child is an agent from `agent_factory` (see the module doc)."""

    def __init__(
        self,
        config: AgentConfig,
        *,
        agent_factory: ChildAgentFactory,
        observer: AgentObserver | None = None,
    ) -> None:
        self._config = config
        self._agent_factory = agent_factory
        self._observer = observer

    @property
    def name(self) -> str:
        return MODEL_PROVIDER

    @property
    def capabilities(self) -> Capabilities:
        return ONE_SHOT_CAPABILITIES

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
        shown = ShownText(self._observer)
        agent = self._agent_factory(child_config(self._config, request), observer=shown)
        return ModelRun(agent, request.prompt, request.cancel, shown=shown, budget=request.budget)


class ShownText:
    """The observer of a child's events: its run events, and the text of its current round.

    Every loop event becomes a run event in `events` (the run's bounded buffer; publishing
    never waits) and goes on to `forward`. The answer text shown in the current round is the
    partial output of a cancel: a tool call starting means the round before it ended with
    tool calls, so that text no longer counts as an answer (as `Agent.run` reports a cancel
    during tools with empty output).
    """

    def __init__(self, forward: AgentObserver | None = None) -> None:
        self._forward = forward
        self._parts: list[str] = []
        self.events = EventBuffer()
        """The run's activity, as `SubagentRun.events()` yields it."""

    @property
    def text(self) -> str:
        """The answer text shown in the current round."""
        return "".join(self._parts)

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            self._parts.append(event.text)
        elif isinstance(event, ToolStarted):
            self._parts.clear()
        published = core_event(event)
        if published is not None:
            self.events.publish(published)
        if self._forward is not None:
            self._forward(event)


class ModelRun(SubagentRun):
    """One in-process child, driven by an `OwnedTask` the run holds.

    `result()` starts the child on first use and settles as soon as either the child ends or
    the request's cancel fires (then `aborted` with the text shown so far, no diagnostic, not
    waiting for the child). `dispose()` stops the child and awaits its task, bounded.
    """

    def __init__(
        self,
        agent: ChildAgent,
        prompt: str,
        cancel: CancelSignal,
        *,
        shown: ShownText | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.id = new_run_id()
        self._context = contextvars.copy_context()
        """Where the run was started (the registry's span current): the child runs in it, so
        its model requests and the runs it delegates join the run's trace."""
        self._agent = agent
        self._budget = budget
        self._prompt = prompt
        self._request_cancel = cancel
        self._shown = ShownText() if shown is None else shown
        self._events = self._shown.events
        # The child stops when the request is cancelled, or alone when the run is disposed.
        self._stop = cancel.child()
        self._settled: SubagentResult | None = None
        self._settled_event = anyio.Event()
        self._owner: OwnedTask | None = None
        self._dispose_lock = anyio.Lock()
        self._disposed = False
        self._dispose_outcome: str | None = None

    async def result(self) -> SubagentResult:
        """The child's result (memoized); never raises for child-level failure.

        Raises:
            RuntimeError: called outside a running asyncio event loop (nothing is started).
        """
        if self._settled is None and self._owner is None:
            if self._stop.cancelled:
                self._settle_aborted()
            else:
                name = f"model_agent.child.{self.id}"
                self._owner = self._context.run(OwnedTask.start, self._own, name=name)
        if self._settled is None:
            with self._request_cancel.cancel_scope():
                await self._settled_event.wait()
            if self._settled is None:
                self._abort()
        assert self._settled is not None
        return self._settled

    async def _own(self) -> None:
        """The child's whole life: the agent's run, then the settlement."""
        try:
            options: dict[str, Any] = {}
            if self._budget is not None:
                options["on_usage"] = self._count
            outcome = await self._agent.run(self._prompt, self._stop, **options)
            if outcome.usage is not None:
                self._shown.events.publish(UsageEvent.of(outcome.usage))
            schema_failed = outcome.status == "failed" and outcome.error == OUTPUT_SCHEMA_ERROR
            self._settle(
                SubagentResult(
                    stop_reason=stop_reason_of(outcome.status),
                    output=outcome.output,
                    diagnostic=OUTPUT_SCHEMA_DIAGNOSTIC if schema_failed else None,
                    usage=outcome.usage,
                    structured_output=outcome.structured_output,
                )
            )
        except Exception:
            # A broken child contract: logged, never shown (its text is not safe).
            _log.exception("model child %s raised", self.id)
            self._settle(SubagentResult(stop_reason="error"))
        finally:
            self._settle_aborted()

    def _count(self, usage: Usage) -> None:
        """A usage report: past the budget, the run settles `error` + `budget` and the child
        stops (its usage so far is published first, so a consumer sees what crossed it)."""
        budget = self._budget
        if budget is None or self._settled is not None or not budget.crossed_by(usage):
            return
        self._shown.events.publish(UsageEvent.of(usage))
        self._settle(
            SubagentResult(
                stop_reason="error",
                output=self._shown.text,
                diagnostic=BUDGET_DIAGNOSTIC,
                usage=usage,
            )
        )
        self._stop.cancel()

    def _settle(self, result: SubagentResult) -> None:
        if self._settled is None:
            self._settled = result
            self._settled_event.set()
            # Events end when the run settles; a child still winding down publishes nothing.
            self._shown.events.close()

    def _abort(self) -> None:
        """A local cancel: ask the child to stop and settle `aborted` now."""
        self._stop.cancel()
        self._settle_aborted()

    def _settle_aborted(self) -> None:
        self._settle(SubagentResult(stop_reason="aborted", output=self._shown.text))

    async def dispose(self) -> str | None:
        """Settles a pending result `aborted`, stops the child and awaits it (bounded).

        Memoized; never raises. Returns None once the child ended (its tool calls' processes
        are gone with it), or the safe teardown line when it did not end in time.
        """
        with anyio.CancelScope(shield=True):
            async with self._dispose_lock:
                if self._disposed:
                    return self._dispose_outcome
                self._disposed = True
                self._abort()
                owner = self._owner
                if owner is not None and not owner.done:
                    with anyio.move_on_after(DISPOSE_WAIT_SECONDS):
                        await owner.wait()
                    if not owner.done:
                        # Past the bound: cancel the child's task (its shielded cleanups run).
                        owner.cancel()
                        with anyio.move_on_after(DISPOSE_WAIT_SECONDS):
                            await owner.wait()
                    if not owner.done:
                        self._dispose_outcome = failure_line(MODEL_PROVIDER, "teardown", "unknown")
        return self._dispose_outcome
