"""The stdio transport of an MCP server that runs as a managed process.

The SDK's own `stdio_client` spawns outside our containment, so the server is started with
subagent-core's `open_managed_process` (its own tree, scrubbed env, whole-tree teardown) and
its pipes are bridged to the SDK's session streams here: lines framed by the bounded core
`LineReader`, parsed with the SDK's JSON-RPC message types. An over-long line (a flood) or
the end of stdout closes the session's stream, so pending requests fail at once; a flooding
server is stopped on the spot. The server's stderr goes to /dev/null: its text is never shown.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Literal

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from subagent_core.kit import (
    FrameTooLargeError,
    LineReader,
    ManagedProcess,
    Teardown,
    open_managed_process,
)

from ._mcp_config import MCPStdioServer

_log = logging.getLogger("model_agent")

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""Longest JSON-RPC line accepted from a server; a longer one ends the connection."""

EOF_GRACE_SECONDS = 2.0
"""After stdin closes, how long a server may take to exit by itself (the MCP SDK's grace)."""

TERM_GRACE_SECONDS = 2.0
KILL_GRACE_SECONDS = 2.0
_TEARDOWN = Teardown(EOF_GRACE_SECONDS, TERM_GRACE_SECONDS, KILL_GRACE_SECONDS)

LinkFailure = Literal["oversized", "closed"]
"""Why a link ended early: a line over the bound, or the server closed its stdout."""


@dataclass(slots=True)
class StdioLink:
    """The session's ends of one server's pipes, and why the link ended (if it did)."""

    read_stream: MemoryObjectReceiveStream[SessionMessage | Exception]
    write_stream: MemoryObjectSendStream[SessionMessage]
    failure: LinkFailure | None = None


@asynccontextmanager
async def open_stdio_link(
    server: MCPStdioServer, *, max_message_bytes: int = MAX_MESSAGE_BYTES
) -> AsyncGenerator[StdioLink]:
    """Starts `server` as a managed process and bridges its pipes to a session's streams.

    On exit the server's stdin is closed while its stdout is still drained, then the whole
    tree is stopped (EOF grace, SIGTERM, SIGKILL), shielded and bounded.

    Raises:
        SpawnError: the command could not be started (nothing runs).
    """
    async with open_managed_process(
        server.child_command, stderr="devnull", teardown=_TEARDOWN
    ) as process:
        to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        link = StdioLink(read_stream, write_stream)
        async with anyio.create_task_group() as pipes:
            pipes.start_soon(_read_stdout, process, to_session, link, max_message_bytes)
            pipes.start_soon(_write_stdin, process, from_session)
            try:
                yield link
            finally:
                # The reader keeps draining stdout while the ladder runs, so a server blocked
                # on a full pipe can still see EOF and exit by itself.
                await process.terminate(EOF_GRACE_SECONDS, TERM_GRACE_SECONDS, KILL_GRACE_SECONDS)
                pipes.cancel_scope.cancel()
        for stream in (read_stream, write_stream):
            stream.close()


async def _read_stdout(
    process: ManagedProcess,
    to_session: MemoryObjectSendStream[SessionMessage | Exception],
    link: StdioLink,
    max_message_bytes: int,
) -> None:
    assert process.stdout is not None
    reader = LineReader(process.stdout, max_frame_bytes=max_message_bytes)
    delivering = True
    with to_session:
        while True:
            try:
                line = await reader.receive_line()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                link.failure = link.failure or "closed"
                return
            except FrameTooLargeError:
                link.failure = "oversized"
                to_session.close()
                _log.warning(
                    "MCP server sent a message over %d bytes; stopping it", max_message_bytes
                )
                # The connection is unusable: stop the server now instead of draining a flood.
                await process.terminate(0.0, TERM_GRACE_SECONDS, KILL_GRACE_SECONDS)
                return
            if not delivering or not line.strip():
                continue
            try:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValidationError:
                # The line's text is the server's: never logged or passed on.
                _log.debug("MCP server sent a line that is not a JSON-RPC message; skipped")
                continue
            try:
                await to_session.send(SessionMessage(message))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                delivering = False  # the session is gone: keep draining until EOF


async def _write_stdin(
    process: ManagedProcess, from_session: MemoryObjectReceiveStream[SessionMessage]
) -> None:
    assert process.stdin is not None
    stdin = process.stdin
    with from_session:
        async for session_message in from_session:
            data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
            try:
                await stdin.send(data.encode() + b"\n")
            except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
