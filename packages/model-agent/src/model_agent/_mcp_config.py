"""MCP servers an agent offers tools from: a stdio command or a streamable-HTTP endpoint.

Plain frozen descriptions validated once at construction; building one never imports the MCP
SDK (its import is slow), which happens only when a run connects to a server.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from urllib.parse import urlsplit

from subagent_core.kit import ChildCommand

MCP_NAME_SEPARATOR = "__"
"""Joins a server's name and its tool's name into the name the model sees (`files__read`)."""

_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _check_name(name: str) -> None:
    if not _SERVER_NAME.fullmatch(name) or MCP_NAME_SEPARATOR in name:
        raise ValueError(
            "an MCP server name must be 1-32 characters of A-Z, a-z, 0-9, '_' or '-' without '__'"
        )


def _check_timeouts(*seconds: float) -> None:
    if not all(value > 0 for value in seconds):
        raise ValueError("MCP server timeouts must be positive numbers of seconds")


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPStdioServer:
    """An MCP server the agent starts as a child process and talks to over its stdin/stdout.

    It runs as a managed process (its own process tree, stopped with the run that started it);
    its environment is this process's minus credential-shaped names, with `env` laid over.
    `command`, `args`, `env` and `cwd` are validated by subagent-core's `ChildCommand`.
    """

    name: str
    """Prefix of the tool names offered from this server (`<name>__<tool>`)."""
    command: str
    """The program to run (an argv, never a shell string)."""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    """Explicit variables; they win over the scrubbed inherited environment (give keys here)."""
    cwd: Path | None = None
    """Working directory of the server (None: the agent's own)."""
    connect_timeout_seconds: float = 30.0
    """Bound on starting the server, the handshake and the tool listing."""
    call_timeout_seconds: float = 120.0
    """Bound on one tool call; past it the call fails with fixed text."""

    def __post_init__(self) -> None:
        _check_name(self.name)
        _check_timeouts(self.connect_timeout_seconds, self.call_timeout_seconds)
        try:
            command = self.child_command
        except ValueError as error:
            raise ValueError(f"MCPStdioServer.{error}") from None
        object.__setattr__(self, "args", command.args)
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        object.__setattr__(self, "cwd", command.cwd)

    @property
    def child_command(self) -> ChildCommand:
        """The server's process as subagent-core describes a child to start."""
        return ChildCommand(command=self.command, args=self.args, env=self.env, cwd=self.cwd)


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPHTTPServer:
    """An MCP server reached over streamable HTTP at `url`."""

    name: str
    """Prefix of the tool names offered from this server (`<name>__<tool>`)."""
    url: str
    """The server's MCP endpoint (`http://` or `https://`)."""
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    """Sent with every request (e.g. `Authorization`); never shown in any result or log."""
    connect_timeout_seconds: float = 30.0
    """Bound on the handshake and the tool listing."""
    call_timeout_seconds: float = 120.0
    """Bound on one tool call; past it the call fails with fixed text."""

    def __post_init__(self) -> None:
        _check_name(self.name)
        _check_timeouts(self.connect_timeout_seconds, self.call_timeout_seconds)
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("an MCP server url must be an http:// or https:// URL")
        for key, value in self.headers.items():
            if not _HEADER_NAME.fullmatch(key) or any(c in value for c in "\r\n\0"):
                raise ValueError("MCP server headers must be valid names with single-line values")
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))


MCPServer = MCPStdioServer | MCPHTTPServer
"""One configured MCP server."""


def check_mcp_servers(servers: Iterable[MCPServer]) -> None:
    """Refuses a configuration naming two servers alike (their tool names would collide).

    Raises:
        ValueError: two servers share a name, or an entry is not an MCP server.
    """
    seen: set[str] = set()
    for server in servers:
        if not isinstance(server, MCPStdioServer | MCPHTTPServer):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError("mcp_servers must hold MCPStdioServer or MCPHTTPServer entries")
        if server.name in seen:
            raise ValueError("two MCP servers share a name")
        seen.add(server.name)
