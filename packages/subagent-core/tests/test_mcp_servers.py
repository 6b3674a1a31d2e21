"""MCP server specs on a request: validated once, credentials kept out of repr."""

from __future__ import annotations

from typing import Any

import pytest
from subagent_core import MCPHTTPServerSpec, MCPSSEServerSpec, MCPStdioServerSpec, SubagentRequest
from subagent_core.kit import ChildCommand


def test_specs_are_normalised_and_hide_credentials_from_repr() -> None:
    stdio = MCPStdioServerSpec(
        name="files",
        command="uvx",
        args=["mcp-files"],  # type: ignore[arg-type]
        env={"API_TOKEN": "tok-123"},
    )
    assert stdio.args == ("mcp-files",)
    assert dict(stdio.env) == {"API_TOKEN": "tok-123"}
    assert stdio.child_command() == ChildCommand(
        command="uvx", args=("mcp-files",), env={"API_TOKEN": "tok-123"}
    )
    http = MCPHTTPServerSpec(
        name="docs", url="https://host/mcp", headers={"Authorization": "Bearer tok-456"}
    )
    sse = MCPSSEServerSpec(name="old", url="http://127.0.0.1:8000/sse")
    for spec in (stdio, http, sse):
        assert "tok-" not in repr(spec)
    assert "tok-" not in repr(ChildCommand(command="x", env={"KEY": "tok-789"}))


def test_a_request_holds_servers_as_a_tuple_with_unique_names() -> None:
    assert SubagentRequest(prompt="p").mcp_servers == ()
    one = MCPSSEServerSpec(name="a", url="https://h/sse")
    two = MCPHTTPServerSpec(name="b", url="https://h/mcp")
    request = SubagentRequest(prompt="p", mcp_servers=[one, two])  # type: ignore[arg-type]
    assert request.mcp_servers == (one, two)
    with pytest.raises(ValueError, match=r"^mcp_servers names must be unique$"):
        SubagentRequest(prompt="p", mcp_servers=(one, MCPHTTPServerSpec(name="a", url="http://x")))
    for bad in ("a", [object()], 3):
        with pytest.raises(
            ValueError, match=r"^mcp_servers must be a sequence of MCP server specs$"
        ):
            SubagentRequest(prompt="p", mcp_servers=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: MCPStdioServerSpec(name="", command="x"),
            "name must be a non-empty string without NUL",
        ),
        (
            lambda: MCPStdioServerSpec(name="n", command=""),
            "command must be a non-empty string without NUL",
        ),
        (
            lambda: MCPStdioServerSpec(name="n", command="x", env={"A": None}),  # type: ignore[dict-item]
            "env values must be strings without NUL",
        ),
        (
            lambda: MCPStdioServerSpec(name="n", command="x", env={"A=B": "1"}),
            "env names must be non-empty strings without '=' or NUL",
        ),
        (
            lambda: MCPHTTPServerSpec(name="n", url="ftp://secret-host"),
            "url must be an http:// or https:// URL without spaces or control characters",
        ),
        (
            lambda: MCPSSEServerSpec(name="n", url="https://h/\nsecret"),
            "url must be an http:// or https:// URL without spaces or control characters",
        ),
        (
            lambda: MCPHTTPServerSpec(name="n", url="https://h", headers={"Bad Name": "v"}),
            "headers names must be HTTP header names",
        ),
        (
            lambda: MCPHTTPServerSpec(name="n", url="https://h", headers={"X": "a\r\nInjected: 1"}),
            "headers values must be strings without CR, LF or NUL",
        ),
    ],
)
def test_bad_specs_are_refused_with_fixed_text(build: Any, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        build()
    assert str(caught.value) == message
