"""One live MCP server connection: the session, its tool listing, and calls mapped to outcomes.

The only module besides the stdio transport that imports the MCP SDK; `_mcp_tools` imports it
lazily, so an agent without MCP servers never pays for the SDK's import.

Safety: what a tool returns (its content, also with `isError`) is tool output, shown to the
model like a command's stdout, bounded the same way. Everything else the server could write —
JSON-RPC error messages, a crash, a hang, a flood — becomes fixed text naming only the
configured server name and observed numbers.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from mcp import ClientSession, MCPError, types
from mcp.client.streamable_http import streamable_http_client
from subagent_core import CancelSignal
from subagent_core.kit import OwnedTask, SpawnError

from ._mcp_config import MCP_NAME_SEPARATOR, MCPServer, MCPStdioServer
from ._mcp_stdio import MAX_MESSAGE_BYTES, StdioLink, open_stdio_link
from ._output_buffer import HeadTailBuffer
from ._tool import ToolOutcome

_log = logging.getLogger("model_agent")

MAX_TOOLS_PER_SERVER = 128
"""Tools kept from one server's listing (the rest are dropped): the model's tool list stays small."""

MAX_LIST_PAGES = 16
"""`tools/list` pages read before the listing is taken as complete."""

STOP_SECONDS = 10.0
"""How long closing waits for one connection to end (a stdio ladder takes at most 6 s)."""

MAX_SCHEMA_BYTES = 64 * 1024
"""A tool whose input schema is larger (as JSON) is not offered: it travels in every request."""

MAX_DESCRIPTION_CHARS = 2048
"""A tool description longer than this is cut (it travels in every model request)."""

_CLOSED = (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError)
_MAX_LABEL_CHARS = 120
_MODEL_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# The MCP SDK's own defaults: a server may hold a response stream open for minutes.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
_CLIENT_INFO = types.Implementation(name="model-agent", version="0.1.0")


@dataclass(frozen=True, slots=True)
class MCPToolSpec:
    """One tool of a server's listing, as offered to the model."""

    name: str
    """`<server>__<tool>`: the name the model calls."""
    remote_name: str
    """The tool's own name on its server."""
    description: str
    parameters: Mapping[str, Any]
    """The tool's input schema, passed through."""
    read_only: bool
    """True only when the server annotates the tool `readOnlyHint: true`."""


class MCPConnection:
    """A connected server: its frozen tool listing and a way to call those tools.

    The session lives in an owner task of its own (see `open_mcp_connections`); when that task
    ends early — the server crashed, the transport broke — every call in flight is ended at
    once with fixed text instead of waiting for its timeout.
    """

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.tools: tuple[MCPToolSpec, ...] = ()
        self._session: ClientSession | None = None
        self._link: StdioLink | None = None
        self._broken = False
        self._calls: set[anyio.CancelScope] = set()
        self._stop = anyio.Event()
        self._ready = anyio.Event()
        self.failure: str | None = None
        """Fixed text saying why the server could not be connected (None: it was)."""

    async def call(
        self, remote_name: str, arguments: Mapping[str, Any], cancel: CancelSignal
    ) -> ToolOutcome:
        """Calls one tool, bounded by the server's call timeout and by `cancel`."""
        name = self.server.name
        timeout = self.server.call_timeout_seconds
        result: types.CallToolResult | None = None
        failure: str | None = None
        if self._broken or self._session is None:
            return ToolOutcome(self._broken_text(), is_error=True)
        with (
            anyio.move_on_after(timeout) as deadline,
            cancel.cancel_scope(),
            anyio.CancelScope() as ended,
        ):
            self._calls.add(ended)
            try:
                result = await self._session.call_tool(remote_name, dict(arguments))
            except MCPError as error:
                failure = self._error_text(error)
            except _CLOSED:
                failure = self._broken_text()
            except Exception as error:
                # E.g. a result against the tool's own output schema. The exception's text may
                # hold the server's words: only its type is logged.
                _log.warning("MCP call to server %s failed: %s", name, type(error).__name__)
                failure = f"MCP tool call failed: server {name} sent an answer that is not usable"
            finally:
                self._calls.discard(ended)
        if cancel.cancelled:
            return ToolOutcome("tool call was cancelled", is_error=True)
        if deadline.cancelled_caught:
            return ToolOutcome(
                f"MCP tool call failed: server {name} did not answer within {timeout:g} s",
                is_error=True,
            )
        if ended.cancelled_caught:
            failure = self._broken_text()
        if failure is not None:
            return ToolOutcome(failure, is_error=True)
        assert result is not None
        return render_result(result)

    def _error_text(self, error: MCPError) -> str:
        if error.code == types.CONNECTION_CLOSED:
            return self._broken_text()
        return (
            f"MCP tool call failed: server {self.server.name} answered with JSON-RPC error "
            f"{error.code}"
        )

    def _broken_text(self) -> str:
        name = self.server.name
        if self._link is not None and self._link.failure == "oversized":
            return f"MCP tool call failed: server {name} sent a message over the size limit"
        return f"MCP tool call failed: the connection to server {name} is closed"

    def _break(self) -> None:
        self._broken = True
        for scope in tuple(self._calls):
            scope.cancel()

    async def wait_ready(self) -> None:
        """Returns once the session is connected with its tools listed, or has failed."""
        await self._ready.wait()

    def stop(self) -> None:
        """Asks `serve` to close the session and stop the server."""
        self._stop.set()

    async def serve(self) -> None:
        """The session's whole life: connect, report (`failure`, `wait_ready`), serve, stop.

        Runs as an `OwnedTask`, outside the run's own task: a transport's failing task group
        (the SDK's HTTP transport lets a request's network error escape into it) cancels only
        this task, and the run's exceptions never pass through the session's task groups.
        """
        server = self.server
        try:
            async with AsyncExitStack() as stack:
                # Entering these starts no I/O that can hang; the bound covers the handshake.
                if isinstance(server, MCPStdioServer):
                    self._link = await stack.enter_async_context(open_stdio_link(server))
                    streams = (self._link.read_stream, self._link.write_stream)
                else:
                    client = await stack.enter_async_context(
                        httpx2.AsyncClient(headers=dict(server.headers), timeout=_HTTP_TIMEOUT)
                    )
                    streams = await stack.enter_async_context(
                        streamable_http_client(
                            server.url, http_client=client, max_sse_event_size=MAX_MESSAGE_BYTES
                        )
                    )
                session = await stack.enter_async_context(
                    ClientSession(streams[0], streams[1], client_info=_CLIENT_INFO)
                )
                with anyio.fail_after(server.connect_timeout_seconds):
                    await session.initialize()
                    self.tools = await list_tools(server, session)
                self._session = session
                self._ready.set()
                await self._stop.wait()
        except SpawnError as error:
            self.failure = f"MCP server {server.name} could not be started ({error.reason})"
        except TimeoutError:
            self.failure = (
                f"MCP server {server.name} did not answer within "
                f"{server.connect_timeout_seconds:g} s"
            )
        except Exception as error:
            # The type only: the message may hold the server's words.
            _log.debug("MCP server %s connection ended: %s", server.name, type(error).__name__)
            self.failure = f"MCP server {server.name} could not be connected"
        finally:
            self._break()
            if self._ready.is_set() and not self._stop.is_set():
                _log.warning("MCP server %s: the connection broke during the run", server.name)
            self._ready.set()


@asynccontextmanager
async def open_mcp_connections(servers: Sequence[MCPServer]) -> AsyncGenerator[list[MCPConnection]]:
    """Connects every server at once; yields them all, each connected or with its `failure`.

    Each connection initializes its session and lists its tools once. Leaving the block closes
    every session and stops every stdio server's whole tree (shielded, bounded).
    """
    connections = [MCPConnection(server) for server in servers]
    owners = [
        OwnedTask.start(connection.serve, name=f"model_agent.mcp.{connection.server.name}")
        for connection in connections
    ]
    try:
        for connection in connections:
            await connection.wait_ready()
        yield connections
    finally:
        for connection in connections:
            connection.stop()
        with anyio.CancelScope(shield=True):
            for owner in owners:
                with anyio.move_on_after(STOP_SECONDS):
                    await owner.wait()
                if not owner.done:
                    owner.cancel()  # past the bound: its shielded process teardown still runs
                    with anyio.move_on_after(STOP_SECONDS):
                        await owner.wait()


async def list_tools(server: MCPServer, session: ClientSession) -> tuple[MCPToolSpec, ...]:
    """The server's tools as offered to the model, from a bounded, paged `tools/list`.

    Left out (one warning with the count): names unusable as a model tool name once
    namespaced, duplicates, input schemas over `MAX_SCHEMA_BYTES`, tools past the 128th.
    """
    listed: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        listed.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None or len(listed) >= MAX_TOOLS_PER_SERVER:
            break
    specs: list[MCPToolSpec] = []
    skipped = 0
    for tool in listed[:MAX_TOOLS_PER_SERVER]:
        name = f"{server.name}{MCP_NAME_SEPARATOR}{tool.name}"
        if (
            not _MODEL_TOOL_NAME.fullmatch(name)
            or any(spec.name == name for spec in specs)
            or len(json.dumps(tool.input_schema)) > MAX_SCHEMA_BYTES
        ):
            skipped += 1
            continue
        annotations = tool.annotations
        specs.append(
            MCPToolSpec(
                name=name,
                remote_name=tool.name,
                description=(tool.description or tool.title or tool.name)[:MAX_DESCRIPTION_CHARS],
                parameters=tool.input_schema,
                read_only=annotations is not None and annotations.read_only_hint is True,
            )
        )
    if skipped or len(listed) > MAX_TOOLS_PER_SERVER:
        _log.warning(
            "MCP server %s: %d tools not offered (unusable name or schema, or over %d tools)",
            server.name,
            skipped + max(0, len(listed) - MAX_TOOLS_PER_SERVER),
            MAX_TOOLS_PER_SERVER,
        )
    return tuple(specs)


def render_result(result: types.CallToolResult) -> ToolOutcome:
    """The model-facing text of a tool result: text kept, media described, bounded head+tail.

    Structured content is shown as JSON when no text block carries it already.
    """
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(block, types.ImageContent) else "audio"
            parts.append(f"[{kind}: {_label(block.mime_type)}, {_decoded_size(block.data)} bytes]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link: {_label(str(block.uri))}]")
        else:
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                parts.append(resource.text)
            else:
                mime = _label(resource.mime_type or "application/octet-stream")
                parts.append(f"[resource: {mime}, {_decoded_size(resource.blob)} bytes]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    buffer = HeadTailBuffer()
    buffer.feed("\n".join(parts).encode("utf-8", errors="replace"))
    text = buffer.render().text
    if not text:
        text = "(the tool returned no content)"
    return ToolOutcome(text, is_error=result.is_error)


def _label(value: str) -> str:
    """A short single-line label (a MIME type or URI) from a tool result."""
    flat = " ".join(value.split())
    return flat[:_MAX_LABEL_CHARS]


def _decoded_size(data: str) -> int:
    """Bytes a base64 payload stands for (counted, never decoded)."""
    return len(data.rstrip("=")) * 3 // 4
