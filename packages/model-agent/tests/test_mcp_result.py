"""What the model sees of an MCP tool result, and the call-time checks of an MCP tool (no I/O)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest
from mcp import ClientSession, types
from model_agent import MCPStdioServer
from model_agent._mcp_client import MCPConnection, MCPToolSpec, list_tools, render_result
from model_agent._mcp_tools import MCPTool, offered_mcp_tools
from model_agent._tool import Space
from model_agent.tools import Mode, RequestContext, ToolOutcome
from subagent_core import CancelSignal


def test_text_blocks_are_joined_and_an_error_result_stays_tool_output() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(text="first"), types.TextContent(text="second")],
        is_error=True,
    )
    assert render_result(result) == ToolOutcome("first\nsecond", is_error=True)


def test_media_is_described_never_passed_raw() -> None:
    png = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
    result = types.CallToolResult(
        content=[
            types.ImageContent(data=png, mime_type="image/png"),
            types.AudioContent(data=base64.b64encode(b"abc").decode(), mime_type="audio/wav"),
            types.EmbeddedResource(
                resource=types.BlobResourceContents(
                    uri="file:///x.bin", blob=base64.b64encode(b"12345678").decode()
                )
            ),
            types.EmbeddedResource(
                resource=types.TextResourceContents(uri="file:///x.txt", text="inline text")
            ),
            types.ResourceLink(uri="file:///linked.txt", name="linked"),
        ]
    )
    assert render_result(result).content == (
        "[image: image/png, 100 bytes]\n"
        "[audio: audio/wav, 3 bytes]\n"
        "[resource: application/octet-stream, 8 bytes]\n"
        "inline text\n"
        "[resource link: file:///linked.txt]"
    )


def test_structured_content_is_shown_as_json_only_without_text() -> None:
    only = types.CallToolResult(content=[], structured_content={"count": 2, "name": "é"})
    assert render_result(only).content == '{"count": 2, "name": "é"}'
    both = types.CallToolResult(
        content=[types.TextContent(text='{"count": 2}')], structured_content={"count": 2}
    )
    assert render_result(both).content == '{"count": 2}'
    empty = types.CallToolResult(content=[])
    assert render_result(empty).content == "(the tool returned no content)"


def test_a_huge_result_keeps_head_and_tail_like_process_output() -> None:
    text = "a" * 20_000 + "é" * 10_000 + "z" * 20_000
    rendered = render_result(types.CallToolResult(content=[types.TextContent(text=text)]))
    total = len(text.encode())
    head, marker_and_tail = rendered.content.split("\n[… ", 1)
    assert head == "a" * 16384
    omitted, tail = marker_and_tail.split(" bytes omitted …]\n", 1)
    assert tail == "z" * 16384
    assert int(omitted) == total - 2 * 16384


class _Connection:
    """Stands in for a live connection: records the calls that reach the server."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Mapping[str, Any]]] = []

    async def call(
        self, remote_name: str, arguments: Mapping[str, Any], cancel: CancelSignal
    ) -> ToolOutcome:
        self.calls.append((remote_name, arguments))
        return ToolOutcome("ok")


def _tool(connection: _Connection, *, read_only: bool) -> MCPTool:
    spec = MCPToolSpec(
        name="s__t",
        remote_name="t",
        description="d",
        parameters={"type": "object"},
        read_only=read_only,
    )
    return MCPTool(cast(MCPConnection, connection), spec)


def _context(mode: Mode, space: Space = "local") -> RequestContext:
    return RequestContext(
        runtime="model",
        mode=mode,
        space=space,
        depth=0,
        workspace=Path("/"),
        workspace_identity=(0, 0),
        shell=None,
        tool_names=("s__t",),
        cancel=CancelSignal(),
    )


async def test_a_writing_tool_refuses_an_ask_call_even_when_reached() -> None:
    connection = _Connection()
    outcome = await _tool(connection, read_only=False).call({}, _context("ask"))
    assert outcome == ToolOutcome(
        "tool call rejected: s__t is not read-only and not available in ask mode", is_error=True
    )
    assert connection.calls == []


@pytest.mark.parametrize(
    ("mode", "read_only"), [("ask", True), ("execute", True), ("execute", False)]
)
async def test_allowed_calls_reach_the_server(mode: Mode, read_only: bool) -> None:
    connection = _Connection()
    outcome = await _tool(connection, read_only=read_only).call({"a": 1}, _context(mode))
    assert outcome == ToolOutcome("ok")
    assert connection.calls == [("t", {"a": 1})]


async def test_no_mcp_call_runs_in_the_ssh_space() -> None:
    connection = _Connection()
    outcome = await _tool(connection, read_only=True).call({}, _context("ask", "ssh"))
    assert outcome.is_error
    assert connection.calls == []


def test_ask_offers_read_only_tools_and_execute_offers_all() -> None:
    reader = _tool(_Connection(), read_only=True)
    writer = _tool(_Connection(), read_only=False)
    assert offered_mcp_tools((reader, writer), "ask") == (reader,)
    assert offered_mcp_tools((reader, writer), "execute") == (reader, writer)
    assert writer.needs_approval
    assert not reader.needs_approval


def test_a_stdio_server_gets_the_scrubbed_environment_with_its_own_env_winning() -> None:
    server = MCPStdioServer(
        name="s", command="srv", args=("--x",), env={"SERVICE_TOKEN": "given", "PATH": "/opt"}
    )
    parent = {"PATH": "/bin", "HOME": "/home/u", "OPENAI_API_KEY": "k", "DSH_SESSION": "1"}
    command = server.child_command
    assert command.argv == ("srv", "--x")
    assert command.environment(parent) == {
        "PATH": "/opt",
        "HOME": "/home/u",
        "SERVICE_TOKEN": "given",
    }


class _Lister:
    """Answers `tools/list` with fixed pages (the cursor is the page index)."""

    def __init__(self, pages: list[list[types.Tool]]) -> None:
        self.pages = pages
        self.asked = 0

    async def list_tools(
        self, *, params: types.PaginatedRequestParams | None = None
    ) -> types.ListToolsResult:
        index = 0 if params is None or params.cursor is None else int(params.cursor)
        self.asked += 1
        cursor = str(index + 1) if index + 1 < len(self.pages) else None
        return types.ListToolsResult(tools=self.pages[index], next_cursor=cursor)


def _listed(name: str, *, read_only: bool | None = None, schema_bytes: int = 0) -> types.Tool:
    schema: dict[str, Any] = {"type": "object"}
    if schema_bytes:
        schema["description"] = "x" * schema_bytes
    annotations = None if read_only is None else types.ToolAnnotations(read_only_hint=read_only)
    return types.Tool(name=name, input_schema=schema, annotations=annotations)


async def test_the_listing_is_paged_namespaced_and_bounded() -> None:
    pages = [
        [_listed("ok", read_only=True), _listed("has.dot"), _listed("big", schema_bytes=70_000)],
        [_listed("ok"), _listed("hinted_false", read_only=False), _listed("x" * 60)],
    ]
    lister = _Lister(pages)
    server = MCPStdioServer(name="srv", command="x")
    specs = await list_tools(server, cast(ClientSession, lister))
    assert lister.asked == 2
    assert [(spec.name, spec.remote_name, spec.read_only) for spec in specs] == [
        ("srv__ok", "ok", True),
        ("srv__hinted_false", "hinted_false", False),
    ]


async def test_the_listing_reads_at_most_16_pages() -> None:
    lister = _Lister([[_listed(f"t{index}")] for index in range(40)])
    specs = await list_tools(MCPStdioServer(name="s", command="x"), cast(ClientSession, lister))
    assert lister.asked == 16
    assert len(specs) == 16
