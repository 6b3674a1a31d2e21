"""MCP tools of one run: connected at its start, listed once, frozen, stopped at its end.

Visibility follows the mode: Ask offers only tools the server annotates `readOnlyHint: true`;
Execute offers all, and `needs_approval` makes the toolset ask the host's `approve` before a
tool without that hint runs. Hiding is not the boundary: every call re-checks the mode.

A delegated child shares its parent's tools (`AgentConfig.mcp_tools`, set by
`subagent_delegate`): the same live sessions, no second server, narrowed by the child's tool
filter and mode — never more than the parent's snapshot. The MCP SDK is imported only here,
lazily, when a config names servers.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from ._tool import Mode, RequestContext, Tool, ToolOutcome

if TYPE_CHECKING:
    from ._config import AgentConfig
    from ._mcp_client import MCPConnection, MCPToolSpec

_log = logging.getLogger("model_agent")


class MCPTool:
    """One MCP server tool offered to the model as `<server>__<tool>`."""

    def __init__(self, connection: MCPConnection, spec: MCPToolSpec) -> None:
        self._connection = connection
        self._spec = spec
        self.name = spec.name
        self.description = spec.description
        self.parameters: Mapping[str, Any] = spec.parameters
        self.read_only = spec.read_only
        """True when the server annotated the tool `readOnlyHint: true` (offered in Ask)."""
        self.needs_approval = not spec.read_only
        """The toolset asks `approve` first (Execute): the tool may change something."""

    @property
    def server_name(self) -> str:
        """The configured name of the server the tool comes from."""
        return self._connection.server.name

    async def call(self, arguments: Mapping[str, Any], context: RequestContext) -> ToolOutcome:
        """Re-checks mode and space, then calls the server; failures are fixed text."""
        if context.space != "local":
            return ToolOutcome(
                "tool call rejected: MCP tools are not available in this execution space",
                is_error=True,
            )
        if not self.read_only and context.mode != "execute":
            return ToolOutcome(
                f"tool call rejected: {self.name} is not read-only and not available in ask mode",
                is_error=True,
            )
        return await self._connection.call(self._spec.remote_name, arguments, context.cancel)


def offered_mcp_tools(tools: Sequence[Tool], mode: Mode) -> tuple[MCPTool, ...]:
    """The MCP tools `mode` may offer: read-only ones in Ask, all in Execute."""
    return tuple(
        tool
        for tool in tools
        if isinstance(tool, MCPTool) and (mode == "execute" or tool.read_only)
    )


@asynccontextmanager
async def open_mcp_tools(config: AgentConfig) -> AsyncGenerator[tuple[MCPTool, ...]]:
    """The run's MCP tools for `config`'s mode: the parent's shared ones, then its own servers.

    Servers are connected at once, in parallel. A server that cannot be connected is left out
    (logged with fixed text); the run goes on.
    Leaving the block stops every server this block started (never a parent's).
    """
    if config.space != "local":
        yield ()
        return
    shared = offered_mcp_tools(config.mcp_tools, config.mode)
    if not config.mcp_servers:
        yield shared
        return
    from ._mcp_client import open_mcp_connections

    async with open_mcp_connections(config.mcp_servers) as connections:
        tools = [*shared]
        for connection in connections:
            if connection.failure is not None:
                _log.warning("%s; its tools are not offered", connection.failure)
            tools.extend(MCPTool(connection, spec) for spec in connection.tools)
        yield offered_mcp_tools(tools, config.mode)
