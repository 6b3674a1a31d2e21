"""The MCP servers an ACP client hands `harness acp-agent`, as the agent's own server configs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

from acp import RequestError
from acp.schema import HttpMcpServer, McpServerStdio
from model_agent import MCPHTTPServer, MCPServer, MCPStdioServer

_MCP_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


def _mcp_name(name: str, taken: set[str]) -> str:
    """A server name the agent accepts (`[A-Za-z0-9_-]`, at most 32, no `__`), unique."""
    base = _MCP_NAME_CHARS.sub("_", name)
    while "__" in base:
        base = base.replace("__", "_")
    base = base.strip("_")[:28] or "mcp"
    candidate, number = base, 1
    while candidate in taken:
        number += 1
        candidate = f"{base}-{number}"
    taken.add(candidate)
    return candidate


def mcp_servers_from_acp(servers: object, workspace: Path) -> tuple[MCPServer, ...]:
    """The agent's MCP servers for a client's `mcpServers` (stdio and http; others refused).

    Raises:
        RequestError: invalid params — an SSE or ACP server (not advertised), or a server the
            agent cannot use (bad command, URL or header); the client's values are not echoed.
    """
    converted: list[MCPServer] = []
    taken: set[str] = set()
    for server in cast(list[Any], servers or []):
        try:
            if isinstance(server, McpServerStdio):
                converted.append(
                    MCPStdioServer(
                        name=_mcp_name(server.name, taken),
                        command=server.command,
                        args=tuple(server.args),
                        env={variable.name: variable.value for variable in server.env},
                        cwd=workspace,
                    )
                )
            elif isinstance(server, HttpMcpServer):
                converted.append(
                    MCPHTTPServer(
                        name=_mcp_name(server.name, taken),
                        url=server.url,
                        headers={header.name: header.value for header in server.headers},
                    )
                )
            else:
                raise RequestError.invalid_params(
                    {"mcpServers": "only stdio and http MCP servers are supported"}
                )
        except ValueError:
            raise RequestError.invalid_params(
                {"mcpServers": "an MCP server's command, URL or headers are not usable"}
            ) from None
    return tuple(converted)
