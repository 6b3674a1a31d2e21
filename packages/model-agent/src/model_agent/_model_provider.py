"""`ModelProvider`: the `model` provider for host code, its children built as `Agent`s.

Besides one-shot runs it keeps sessions (`_model_session`): the child's conversation history
across turns, and, with a state dir, stored after each turn so `resume_session` continues it
in a fresh provider.
"""

from __future__ import annotations

import dataclasses

import anyio
from subagent_core import Capabilities, SessionRequest, SubagentStartError
from subagent_core.kit import (
    ChildKind,
    FailureCategory,
    SessionSlot,
    failure_line,
    session_workspace,
)

from ._agent import Agent
from ._config import AgentConfig
from ._events import AgentObserver
from ._history import ChatMessage
from ._model_run import (
    ABORTED_BEFORE_START_TEXT,
    MODEL_CAPABILITIES,
    MODEL_PROVIDER,
    ChildAgent,
    ChildAgentFactory,
    ChildProvider,
    child_config,
)
from ._model_session import HISTORY_FILE, ModelSession, load_history, store_history

_KIND: ChildKind = "model"
"""The kit's checks name a provider's kind only in the aborted-before-start sentence, which
this provider raises itself (with the same words) before they run."""


class ModelProvider(ChildProvider):
    """Runs each child as an in-process `Agent` built from `config` (depth 1, narrowed tools).

    `agent_factory` replaces how a child agent is built (e.g. with extra tools); `observer`
    sees every child's events.
    """

    def __init__(
        self,
        config: AgentConfig,
        *,
        observer: AgentObserver | None = None,
        agent_factory: ChildAgentFactory = Agent,
    ) -> None:
        super().__init__(config, agent_factory=agent_factory, observer=observer)

    @property
    def capabilities(self) -> Capabilities:
        return MODEL_CAPABILITIES

    async def open_session(self, request: SessionRequest, slot: SessionSlot) -> ModelSession:
        """A conversation kept for several turns; with a state dir, stored after each turn.

        Raises:
            SubagentStartError: the request was cancelled already, or no usable workspace
                (`initialize` / `configuration`, also when the state dir cannot be written).
        """
        return await self._session(request, slot, resume=False)

    async def resume_session(self, request: SessionRequest, slot: SessionSlot) -> ModelSession:
        """Continues the stored conversation of `slot` with fresh agents.

        Raises:
            SubagentStartError: `resume-miss` when the stored history is missing or is not a
                well-formed conversation (never a fresh start), `configuration` for another
                workspace; else as `open_session`.
        """
        return await self._session(request, slot, resume=True)

    async def _session(
        self, request: SessionRequest, slot: SessionSlot, *, resume: bool
    ) -> ModelSession:
        if request.cancel.cancelled:
            raise SubagentStartError(ABORTED_BEFORE_START_TEXT)
        config = self._config
        # As a one-shot child: the request's workspace, else the configured one.
        configured = config.workspace if request.cwd is None else None
        cwd = session_workspace(_KIND, MODEL_PROVIDER, request, configured, slot, resume=resume)
        if resume:
            history = await anyio.to_thread.run_sync(_stored_history, slot)
        else:
            history = _new_history(slot)
        child = dataclasses.replace(child_config(config, request.turn_request("")), workspace=cwd)
        return ModelSession(self._build, child, slot, request, history, observer=self._observer)

    def _build(self, config: AgentConfig, observer: AgentObserver) -> ChildAgent:
        return self._agent_factory(config, observer=observer)


def _new_history(slot: SessionSlot) -> tuple[ChatMessage, ...]:
    """A new session's empty conversation, stored at once when it is resumable (a session
    resumed before its first turn continues from nothing, by its record)."""
    try:
        folder = slot.child_state
        if folder is not None:
            store_history(folder, ())
            slot.update(child_session=HISTORY_FILE)
    except OSError as error:
        raise _start_error("configuration") from error
    return ()


def _stored_history(slot: SessionSlot) -> tuple[ChatMessage, ...]:
    try:
        folder = slot.child_state
    except OSError:
        folder = None
    history = None if folder is None else load_history(folder)
    if history is None:
        raise _start_error("resume-miss")
    return history


def _start_error(category: FailureCategory) -> SubagentStartError:
    line = failure_line(MODEL_PROVIDER, "initialize", category)
    return SubagentStartError(line, line)
