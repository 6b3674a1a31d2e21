"""Builds model-agent objects from the harness's resolved settings (imports model-agent)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from model_agent import AgentConfig, ApprovalCallback, ModelEndpoint

from ._endpoint import ResolvedEndpoint


def model_endpoint(endpoint: ResolvedEndpoint) -> ModelEndpoint:
    """model-agent's endpoint for `endpoint`."""
    return ModelEndpoint(
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        model=endpoint.model,
        max_tokens=endpoint.max_tokens,
        retry_statuses=frozenset(endpoint.retry_statuses),
    )


def agent_config(
    endpoint: ResolvedEndpoint,
    *,
    workspace: Path,
    mode: Literal["ask", "execute"],
    max_steps: int = 50,
    approve: ApprovalCallback | None = None,
) -> AgentConfig:
    """A top-level (depth 0) direct-model agent working in `workspace`."""
    return AgentConfig(
        endpoint=model_endpoint(endpoint),
        workspace=workspace,
        mode=mode,
        max_steps=max_steps,
        approve=approve,
    )
