"""model-agent's objects for the direct-model agent, from the harness's resolved settings.

`harness run`, the agent servers, the `model` provider and the demo all build their agent
here, so an endpoint or an MCP server means the same thing to each of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from model_agent import (
    AgentConfig,
    ApprovalCallback,
    MCPHTTPServer,
    MCPServer,
    MCPStdioServer,
    ModelEndpoint,
)

from harness._config.endpoint import ResolvedEndpoint
from harness._config.settings import MCPServerSettings, WorkMode
from harness._console.exit_codes import UsageError


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
    mode: WorkMode,
    max_steps: int = 50,
    approve: ApprovalCallback | None = None,
    approve_child_actions: bool = False,
    mcp: Sequence[MCPServerSettings] = (),
) -> AgentConfig:
    """A top-level (depth 0) direct-model agent working in `workspace`.

    Raises:
        UsageError: an MCP server's settings are invalid or reference an unset variable.
    """
    servers = mcp_servers(mcp)
    try:
        return AgentConfig(
            endpoint=model_endpoint(endpoint),
            workspace=workspace,
            mode=mode,
            max_steps=max_steps,
            approve=approve,
            approve_child_actions=approve_child_actions,
            mcp_servers=servers,
        )
    except ValueError as error:
        raise UsageError(f"mcp: {error}") from None


def mcp_servers(settings: Sequence[MCPServerSettings]) -> tuple[MCPServer, ...]:
    """model-agent's server descriptions, `${VAR}` references resolved now (at run start).

    Raises:
        UsageError: a server is invalid (the message names it) or references an unset variable.
    """
    servers: list[MCPServer] = []
    for item in settings:
        env, headers = item.resolved()
        try:
            if item.url is not None:
                servers.append(MCPHTTPServer(name=item.name, url=item.url, headers=headers))
            else:
                assert item.command is not None  # the parser requires command or url
                servers.append(
                    MCPStdioServer(
                        name=item.name,
                        command=item.command,
                        args=item.args,
                        env=env,
                        cwd=item.cwd,
                    )
                )
        except ValueError as error:
            raise UsageError(f"mcp.{item.name}: {error}") from None
    return tuple(servers)
