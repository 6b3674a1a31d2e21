"""The agent loop: model round, then its tool calls one at a time, until an answer or a limit.

One `Agent` is one conversation (an ACP or SDK session): it keeps its messages across
sequential `run` calls. A run ends `completed`, `failed`, `cancelled`, `max-tokens`,
`step-limit` or `refusal`; expected outcomes are values, never exceptions.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from subagent_core import CancelSignal, Usage

from ._activity import ActivityEntry, ActivityLog
from ._config import AgentConfig
from ._events import AgentEvent, AgentObserver, Retrying, ToolEnded, ToolStarted
from ._history import ChatMessage, parse_history
from ._mcp_tools import open_mcp_tools
from ._model_client import ModelClient, ModelRequestError
from ._output_schema import RETRY_INSTRUCTION, parsed_answer, response_format
from ._result import OUTPUT_SCHEMA_ERROR, AgentResult, AgentStatus
from ._round import ModelRound, ToolCall
from ._tool import RequestContext, Tool, ToolOutcome
from ._toolset import Toolset
from ._usage import UsageObserver, add_usage

_log = logging.getLogger("model_agent")

_FINISH_STATUS: dict[str, AgentStatus] = {"length": "max-tokens", "content_filter": "refusal"}

TOOL_CANCEL_GRACE_SECONDS = 10.0
"""After a cancel, how long a running tool may take to stop by itself before its task is
cancelled (its own shielded cleanup still runs)."""

SUMMARY_INSTRUCTION = (
    "Summarize the conversation so far for your own later use: the user's requests, the facts "
    "found, the files and commands involved, what was done and what remains. Be complete but "
    "brief."
)
SUMMARY_PREFIX = "Summary of the earlier conversation:\n"
_NOT_RUN_CANCELLED = "tool call not run: the request was cancelled"
_NOT_RUN_STEP_LIMIT = "tool call not run: the step limit was reached"
_NOT_RUN_INTERNAL = "tool call failed with an internal error"


class Agent:
    """A direct-model agent bound to one workspace, mode and model endpoint.

    Runs are sequential: a second `run` while one is in progress raises `RuntimeError`.
    `extra_tools` are offered next to the built-ins in every mode; they must honour
    `context.mode` themselves.
    """

    def __init__(
        self,
        config: AgentConfig,
        *,
        observer: AgentObserver | None = None,
        extra_tools: Sequence[Tool] = (),
    ) -> None:
        self._config = config
        self._observer = observer
        self._toolset = Toolset(config, extra_tools=extra_tools, agent_factory=Agent)
        self._history: list[ChatMessage] = []
        self._running = False

    @property
    def config(self) -> AgentConfig:
        """The configuration the agent was built with."""
        return self._config

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The tools offered to the model, in order."""
        return self._toolset.names

    @property
    def shell(self) -> str | None:
        """The shell found when the agent was built (None: `process_execute` is hidden)."""
        return self._toolset.shell

    @property
    def settings_diagnostics(self) -> tuple[str, ...]:
        """Settings problems to show the user (e.g. no shell for `process_execute`)."""
        return self._toolset.diagnostics

    @property
    def messages(self) -> tuple[ChatMessage | dict[str, str], ...]:
        """The conversation so far as the next request sends it (system prompt first)."""
        return (self.system_message(), *self._history)

    @property
    def history(self) -> tuple[ChatMessage, ...]:
        """The conversation so far, without the system prompt (what `run` returns)."""
        return tuple(self._history)

    def system_message(self) -> dict[str, str]:
        """The system message every request starts with (it follows the agent's mode)."""
        return {"role": "system", "content": _system_prompt(self._config)}

    async def run(
        self,
        prompt: str,
        cancel: CancelSignal | None = None,
        *,
        history: Sequence[ChatMessage] | None = None,
        on_usage: UsageObserver | None = None,
    ) -> AgentResult:
        """Works on `prompt` until an answer, the step limit, a failure or `cancel`.

        `history` (a previous result's `history`, or `parse_history` of a stored one) replaces
        the conversation this agent had; None continues the agent's own. `on_usage` sees the
        run's usage total as it grows (a host's budget can cancel the run between rounds).

        Raises:
            RuntimeError: another run of this agent is in progress.
            HistoryError: `history` is not a well-formed conversation.
        """
        if self._running:
            raise RuntimeError("Agent.run is already in progress for this agent")
        if history is not None:
            self._history = list(parse_history(history))
        self._running = True
        cancel = CancelSignal() if cancel is None else cancel
        activity = ActivityLog()
        try:
            workspace, identity = await anyio.to_thread.run_sync(
                _workspace_facts, self._config.workspace
            )
        except OSError:
            self._running = False
            return AgentResult(
                status="failed",
                output="",
                error="the workspace is not accessible",
                history=tuple(self._history),
            )
        try:
            async with open_mcp_tools(self._config) as mcp_tools:
                toolset = self._toolset.with_tools(mcp_tools)
                context = RequestContext(
                    runtime=self._config.runtime,
                    mode=self._config.mode,
                    space=self._config.space,
                    depth=self._config.depth,
                    workspace=workspace,
                    workspace_identity=identity,
                    shell=self._toolset.shell,
                    tool_names=toolset.names,
                    cancel=cancel,
                    activity=activity,
                    mcp_tools=mcp_tools,
                )
                context.observer = self._gated(context)
                run = _Run(self._config, self._history, context, toolset, on_usage)
                try:
                    result = await run.execute(prompt)
                finally:
                    context.state = "terminal"
                    activity.close()
        finally:
            self._running = False
        return AgentResult(
            status=result.status,
            output=result.output,
            error=result.error,
            usage=run.usage(),
            structured_output=result.structured_output,
            activity=activity.snapshot(),
            history=tuple(self._history),
        )

    def _gated(self, context: RequestContext) -> AgentObserver:
        observer = self._observer

        def emit(event: AgentEvent) -> None:
            if context.state != "terminal" and observer is not None:
                try:
                    observer(event)
                except Exception:
                    # A failing observer (a closed UI, a broken pipe) must not change the run.
                    _log.exception("agent observer failed; the event is dropped")

        return emit


@dataclass(frozen=True, slots=True)
class _Ending:
    status: AgentStatus
    output: str
    error: str | None = None
    structured_output: object = None


class _Run:
    """The state of one `Agent.run`."""

    def __init__(
        self,
        config: AgentConfig,
        history: list[ChatMessage],
        context: RequestContext,
        toolset: Toolset,
        on_usage: UsageObserver | None = None,
    ) -> None:
        self._config = config
        self._toolset = toolset
        self._on_usage = on_usage
        self._history = history
        """The agent's conversation, extended in place as the run goes."""
        self._system = {"role": "system", "content": _system_prompt(config)}
        self._context = context
        self._usage: Usage | None = None
        schema = config.output_schema
        self._response_format = None if schema is None else response_format(schema)
        self._schema_retried = False

    def usage(self) -> Usage | None:
        """The run's total so far: every model request and every delegated child."""
        return self._usage

    def _add_usage(self, usage: Usage | None) -> None:
        self._usage = add_usage(self._usage, usage)
        if usage is not None and self._usage is not None and self._on_usage is not None:
            try:
                self._on_usage(self._usage)
            except Exception:
                # As for the observer: a failing host callback must not change the run.
                _log.exception("agent usage observer failed")

    def _record(self, entry: ActivityEntry) -> None:
        self._context.record(entry)

    def _model_observer(self, *, show: bool) -> AgentObserver:
        context = self._context

        def observe(event: AgentEvent) -> None:
            if isinstance(event, Retrying):
                self._record(
                    ActivityEntry(
                        kind="retry",
                        attempt=event.attempt,
                        delay_seconds=event.delay_seconds,
                        reason=event.reason,
                    )
                )
            elif not show:
                return
            context.emit(event)

        return observe

    async def execute(self, prompt: str) -> _Ending:
        config = self._config
        context = self._context
        cancel = context.cancel
        self._history.append({"role": "user", "content": prompt})
        self._record(ActivityEntry(kind="user", text=prompt))
        async with ModelClient(config.endpoint) as client:
            steps = 0
            last_output = ""
            while True:
                if cancel.cancelled:
                    return _Ending("cancelled", "")
                if steps >= config.max_steps:
                    return _Ending("step-limit", last_output)
                ending = await self._maybe_summarize(client)
                if ending is not None:
                    return ending
                steps += 1
                try:
                    reply = await client.complete(
                        [self._system, *self._history],
                        tools=self._toolset.schemas(),
                        cancel=cancel,
                        observer=self._model_observer(show=True),
                        response_format=self._response_format,
                    )
                except ModelRequestError as error:
                    return self._request_failed(error)
                self._add_usage(reply.usage)
                self._record_round(reply)
                last_output = reply.content
                self._history.append(_assistant_message(reply))
                if not reply.tool_calls:
                    status = _FINISH_STATUS.get(reply.finish_reason or "", "completed")
                    if status != "completed" or config.output_schema is None:
                        return _Ending(status, reply.content)
                    ending = self._checked_answer(config.output_schema, reply.content)
                    if ending is not None:
                        return ending
                    continue
                if steps >= config.max_steps:
                    self._skip_calls(reply.tool_calls, _NOT_RUN_STEP_LIMIT)
                    return _Ending("step-limit", reply.content)
                ending = await self._run_calls(reply.tool_calls)
                if ending is not None:
                    return ending

    def _checked_answer(self, schema: Mapping[str, Any], content: str) -> _Ending | None:
        """The ending of a final answer under an output schema; None: ask once more."""
        valid, value = parsed_answer(schema, content)
        if valid:
            return _Ending("completed", content, structured_output=value)
        if self._schema_retried:
            self._record(ActivityEntry(kind="failure", reason="output-schema"))
            return _Ending("failed", content, OUTPUT_SCHEMA_ERROR)
        self._schema_retried = True
        self._history.append({"role": "user", "content": RETRY_INSTRUCTION})
        return None

    def _request_failed(self, error: ModelRequestError) -> _Ending:
        if error.reasoning:
            self._record(ActivityEntry(kind="reasoning", text=error.reasoning))
        if error.content:
            self._record(ActivityEntry(kind="answer", text=error.content))
        if error.kind == "cancelled":
            return _Ending("cancelled", error.content)
        self._record(ActivityEntry(kind="failure", reason=error.reason))
        return _Ending("failed", error.content, str(error))

    def _record_round(self, reply: ModelRound) -> None:
        if reply.reasoning:
            self._record(ActivityEntry(kind="reasoning", text=reply.reasoning))
        if reply.content:
            self._record(ActivityEntry(kind="answer", text=reply.content))

    def _skip_calls(self, calls: Sequence[ToolCall], text: str) -> None:
        """Answers calls that will not run, so the conversation stays well-formed."""
        for call in calls:
            self._history.append({"role": "tool", "tool_call_id": call.id, "content": text})

    async def _run_calls(self, calls: Sequence[ToolCall]) -> _Ending | None:
        context = self._context
        for index, call in enumerate(calls):
            if context.cancel.cancelled:
                self._skip_calls(calls[index:], _NOT_RUN_CANCELLED)
                return _Ending("cancelled", "")
            outcome = await self._run_call(call)
            if outcome is not None:
                # A delegated child's requests are part of this run's cost.
                self._add_usage(outcome.usage)
            if outcome is None:
                # A tool raised: a broken internal contract ends the loop (failure is a value).
                self._skip_calls(calls[index:], _NOT_RUN_INTERNAL)
                self._record(ActivityEntry(kind="failure", name=call.name, reason="tool-error"))
                return _Ending("failed", "", f"internal error in tool {call.name}")
            self._history.append(
                {"role": "tool", "tool_call_id": call.id, "content": outcome.content}
            )
            self._record(
                ActivityEntry(
                    kind="tool",
                    call_id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                    text=outcome.content,
                    is_error=outcome.is_error,
                )
            )
            context.emit(ToolEnded(call.id, call.name, outcome.content, outcome.is_error))
        if context.cancel.cancelled:
            return _Ending("cancelled", "")
        return None

    async def _run_call(self, call: ToolCall) -> ToolOutcome | None:
        """Runs one call; a cancel moves the request to `cancelling` and bounds the wait.

        The call runs in its own task while this one waits for its end or the cancel, then
        gives it `TOOL_CANCEL_GRACE_SECONDS` to stop by itself before cancelling it.
        Returns None when the tool raised (its exception text is never shown: it is logged).
        """
        context = self._context
        context.emit(ToolStarted(call.id, call.name, call.arguments))
        outcome: ToolOutcome | None = None
        crashed = False
        ended = anyio.Event()

        async def run_tool() -> None:
            nonlocal outcome, crashed
            try:
                outcome = await self._toolset.call(call, context)
            except Exception:
                _log.exception("tool %s raised", call.name)
                crashed = True
            finally:
                ended.set()

        async with anyio.create_task_group() as group:
            group.start_soon(run_tool)
            with context.cancel.cancel_scope():
                await ended.wait()
            if not ended.is_set():
                if context.state == "active":
                    context.state = "cancelling"
                with anyio.move_on_after(TOOL_CANCEL_GRACE_SECONDS):
                    await ended.wait()
                group.cancel_scope.cancel()
        if crashed:
            return None
        if outcome is None:
            return ToolOutcome("tool call was cancelled", is_error=True)
        return outcome

    async def _maybe_summarize(self, client: ModelClient) -> _Ending | None:
        """Compacts the conversation once it passes the budget (one model call, same rule).

        Older turns become one summary message and the current turn stays verbatim; when the
        current turn alone is over the budget, it is summarized with the rest.
        """
        budget = self._config.context_budget_chars
        history = self._history
        if len(history) < 2 or _size(history) <= budget:
            return None
        turn = _current_turn_start(history)
        keep = turn if turn > 0 and _size(history[turn:]) <= budget // 2 else len(history)
        transcript = json.dumps(history[:keep], ensure_ascii=False)
        request = [
            {"role": "system", "content": SUMMARY_INSTRUCTION},
            {"role": "user", "content": "Summarize the conversation so far:\n" + transcript},
        ]
        try:
            reply = await client.complete(
                request, cancel=self._context.cancel, observer=self._model_observer(show=False)
            )
        except ModelRequestError as error:
            if error.kind == "cancelled":
                return _Ending("cancelled", "")
            self._record(ActivityEntry(kind="failure", reason=error.reason))
            return _Ending("failed", "", f"context summarization: {error}")
        self._add_usage(reply.usage)
        self._record(ActivityEntry(kind="summary", text=reply.content))
        history[:keep] = [{"role": "user", "content": SUMMARY_PREFIX + reply.content}]
        return None


def _system_prompt(config: AgentConfig) -> str:
    if config.system_prompt is not None:
        return config.system_prompt
    mode = config.mode
    rules = (
        "You may read the workspace but not change it."
        if mode == "ask"
        else "You may read and change the workspace and run commands when tools allow it."
    )
    return (
        "You are a careful software agent working in a project workspace. "
        f"Mode: {mode}. {rules} Use the tools offered; paths are relative to the workspace "
        "root. Answer with a concise final message when done."
    )


def _current_turn_start(history: Sequence[ChatMessage]) -> int:
    """Index of the last user message: where the turn being worked on begins."""
    for index in range(len(history) - 1, -1, -1):
        if history[index]["role"] == "user":
            return index
    return 0


def _workspace_facts(workspace: Path) -> tuple[Path, tuple[int, int]]:
    """The workspace's realpath and (st_dev, st_ino), taken when a request begins."""
    real = Path(os.path.realpath(workspace))
    if not real.is_dir():
        raise NotADirectoryError(real)
    stat = real.stat()
    return real, (stat.st_dev, stat.st_ino)


def _size(messages: Sequence[ChatMessage]) -> int:
    return sum(len(json.dumps(message, ensure_ascii=False)) for message in messages)


def _assistant_message(reply: ModelRound) -> ChatMessage:
    message: ChatMessage = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in reply.tool_calls
        ]
        # DeepSeek rejects the next request unless reasoning comes back on tool-call turns.
        if reply.reasoning is not None:
            message["reasoning_content"] = reply.reasoning
    return message
