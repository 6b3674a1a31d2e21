"""The in-process `model` provider, built from its config and the resolved endpoint."""

from __future__ import annotations

from pathlib import Path

from model_agent import ModelProvider
from subagent_core import SubagentProvider

from harness._config.endpoint import MissingKeyError, ResolvedEndpoint
from harness._config.settings import ModelChildConfig

from .model_agent_config import agent_config


def model_provider(
    config: ModelChildConfig, *, endpoint: ResolvedEndpoint | None, workspace: Path
) -> SubagentProvider:
    """model-agent's provider for `config` (ask or execute children in `workspace`).

    Raises:
        MissingKeyError: no usable endpoint (the real API without `DEEPSEEK_API_KEY`).
    """
    if endpoint is None:
        raise MissingKeyError
    return ModelProvider(agent_config(endpoint, workspace=workspace, mode=config.mode))
