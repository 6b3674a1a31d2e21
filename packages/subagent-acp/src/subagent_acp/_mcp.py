"""The request's MCP servers in ACP's `session/new` shapes, checked against what the child takes.

ACP lets every agent take stdio servers; HTTP and SSE servers only when the agent advertises
`mcpCapabilities.http` / `.sse`. A server the child cannot take is never dropped silently: the
start fails with a configuration fact before `session/new`. Env values and headers are the
caller's and go to the child as given; they never reach a diagnostic or a log.
"""

from __future__ import annotations

from collections.abc import Sequence

from acp.schema import (
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    InitializeResponse,
    McpServerStdio,
    SseMcpServer,
)
from subagent_core import MCPHTTPServerSpec, MCPServerSpec, MCPStdioServerSpec

from ._bridge import MCPServer


def mcp_servers_for(
    specs: Sequence[MCPServerSpec], initialized: InitializeResponse
) -> list[MCPServer] | None:
    """The servers to send, or `None` when the child does not advertise a needed transport."""
    capabilities = initialized.agent_capabilities
    mcp = None if capabilities is None else capabilities.mcp_capabilities
    http = bool(mcp is not None and mcp.http)
    sse = bool(mcp is not None and mcp.sse)
    servers: list[MCPServer] = []
    for spec in specs:
        if isinstance(spec, MCPStdioServerSpec):
            servers.append(
                McpServerStdio(
                    name=spec.name,
                    command=spec.command,
                    args=list(spec.args),
                    env=[EnvVariable(name=k, value=v) for k, v in spec.env.items()],
                )
            )
            continue
        headers = [HttpHeader(name=k, value=v) for k, v in spec.headers.items()]
        if isinstance(spec, MCPHTTPServerSpec):
            if not http:
                return None
            servers.append(
                HttpMcpServer(type="http", name=spec.name, url=spec.url, headers=headers)
            )
        else:
            if not sse:
                return None
            servers.append(SseMcpServer(type="sse", name=spec.name, url=spec.url, headers=headers))
    return servers
