"""MCP servers a parent hands to a child, in the three shapes ACP knows (stdio, HTTP, SSE).

These are descriptions, not connections: a provider passes them on (ACP `session/new`) or
connects them itself (the in-process model child). They hold credentials (`env`, `headers`),
so those fields stay out of `repr`. Each `ValueError` message starts with the field name and
never echoes a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import cast

from ._command import ChildCommand


def _no_mapping() -> Mapping[str, str]:
    return MappingProxyType({})


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_URL = re.compile(r"https?://[^\s\x00-\x1f\x7f]+", re.IGNORECASE)


def _check_name(name: object) -> str:
    if not isinstance(name, str) or name == "" or "\x00" in name:
        raise ValueError("name must be a non-empty string without NUL")
    return name


def _check_url(url: object) -> str:
    if not isinstance(url, str) or _URL.fullmatch(url) is None:
        raise ValueError(
            "url must be an http:// or https:// URL without spaces or control characters"
        )
    return url


def _check_headers(headers: object) -> Mapping[str, str]:
    if not isinstance(headers, Mapping):
        raise ValueError("headers must be a mapping of names to strings")
    checked: dict[str, str] = {}
    for name, value in cast("Mapping[object, object]", headers).items():
        if not isinstance(name, str) or _HEADER_NAME.fullmatch(name) is None:
            raise ValueError("headers names must be HTTP header names")
        if not isinstance(value, str) or any(c in value for c in "\r\n\x00"):
            raise ValueError("headers values must be strings without CR, LF or NUL")
        checked[name] = value
    return MappingProxyType(checked)


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPStdioServerSpec:
    """An MCP server the child starts as a process speaking MCP over its stdio.

    Raises:
        ValueError: a field is invalid (`command`, `args` and `env` follow `ChildCommand`'s
            rules; `env` values cannot be `None` here).
    """

    name: str
    """The server's name as the parent configured it."""
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=_no_mapping, repr=False)
    """Explicit variables for the server (credentials included); not shown by `repr`."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "name", _check_name(cast(object, self.name)))
        env = cast(object, self.env)
        if isinstance(env, Mapping) and any(
            value is None for value in cast("Mapping[object, object]", env).values()
        ):
            raise ValueError("env values must be strings without NUL")
        command = ChildCommand(command=self.command, args=self.args, env=self.env)
        set_(self, "command", command.command)
        set_(self, "args", command.args)
        set_(self, "env", cast("Mapping[str, str]", command.env))

    def child_command(self) -> ChildCommand:
        """The server's process as a `ChildCommand` (for `open_managed_process`)."""
        return ChildCommand(command=self.command, args=self.args, env=self.env)


@dataclass(frozen=True, slots=True, kw_only=True)
class _RemoteServerSpec:
    """The fields and checks both HTTP transports share; each transport is its own type."""

    name: str
    url: str
    headers: Mapping[str, str] = field(default_factory=_no_mapping, repr=False)
    """Sent with every request (credentials included); not shown by `repr`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", _check_name(cast(object, self.name)))
        object.__setattr__(self, "url", _check_url(cast(object, self.url)))
        object.__setattr__(self, "headers", _check_headers(cast(object, self.headers)))


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPHTTPServerSpec(_RemoteServerSpec):
    """An MCP server reached over streamable HTTP.

    Raises:
        ValueError: a field is invalid.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPSSEServerSpec(_RemoteServerSpec):
    """An MCP server reached over HTTP with server-sent events (the older transport).

    Raises:
        ValueError: a field is invalid.
    """


MCPServerSpec = MCPStdioServerSpec | MCPHTTPServerSpec | MCPSSEServerSpec
"""Any MCP server a parent can hand to a child."""


def check_mcp_servers(servers: object) -> tuple[MCPServerSpec, ...]:
    """A request's servers as a tuple of specs with unique names.

    Raises:
        ValueError: not a sequence of specs, or two share a name.
    """
    if isinstance(servers, str | bytes) or not isinstance(servers, Sequence):
        raise ValueError("mcp_servers must be a sequence of MCP server specs")
    specs: list[MCPServerSpec] = []
    for item in cast("Sequence[object]", servers):
        if not isinstance(item, MCPStdioServerSpec | MCPHTTPServerSpec | MCPSSEServerSpec):
            raise ValueError("mcp_servers must be a sequence of MCP server specs")
        specs.append(item)
    if len({spec.name for spec in specs}) != len(specs):
        raise ValueError("mcp_servers names must be unique")
    return tuple(specs)
