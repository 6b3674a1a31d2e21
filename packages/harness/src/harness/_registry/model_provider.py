"""The in-process `model` provider, built from the resolved endpoint."""

from __future__ import annotations

from pathlib import Path

from model_agent import ModelProvider
from subagent_core import SubagentProvider

from ._agent_factory import agent_config
from ._config import ProviderSettings
from ._endpoint import MissingKeyError, ResolvedEndpoint


def model_provider(
    settings: ProviderSettings, *, endpoint: ResolvedEndpoint | None, workspace: Path
) -> SubagentProvider:
    """model-agent's provider for `settings` (ask or execute children in `workspace`).

    Raises:
        MissingKeyError: no usable endpoint (the real API without `DEEPSEEK_API_KEY`).
    """
    if endpoint is None:
        raise MissingKeyError
    return ModelProvider(agent_config(endpoint, workspace=workspace, mode=settings.mode))
