"""`ModelProvider`: the `model` provider for host code, its children built as `Agent`s."""

from __future__ import annotations

from ._agent import Agent
from ._config import AgentConfig
from ._events import AgentObserver
from ._model_run import ChildAgentFactory, ChildProvider


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
