"""`harness mcp`'s stdio transport: our stdin lines in, the SDK's messages out, stdout only.

The MCP SDK's server (`mcp.server.lowlevel.Server.run`) reads and writes `SessionMessage`s on
a pair of memory streams; this module feeds them from the harness's own stdio (core's
`open_stdio_streams`, bounded lines through `stdin_lines`, as `acp-agent` reads), so one
frame a client sends cannot exhaust memory and no worker thread is left blocked on stdin
when the server stops. Input ends at stdin EOF (how Claude Code ends its servers) or when the
pipe breaks (the client died): the read stream closes and the server winds down. stdout
carries the SDK's frames and nothing else; once its reader is gone, frames are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter
from subagent_core.kit import open_stdio_streams

from .stdin_lines import stdin_lines

_log = logging.getLogger("harness.mcp")


@asynccontextmanager
async def open_mcp_stdio() -> AsyncGenerator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """The `(read, write)` streams `Server.run` takes, over this process's stdin and stdout.

    The read stream ends at stdin EOF; a line that is not a JSON-RPC message is skipped
    (logged, never echoed). Leaving the block stops both pumps.
    """
    async with open_stdio_streams() as (receive, send):
        incoming, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pump_stdin, receive, incoming)
            tg.start_soon(_pump_stdout, outgoing, send)
            try:
                yield read_stream, write_stream
            finally:
                tg.cancel_scope.cancel()


async def _pump_stdin(
    receive: anyio.abc.ByteReceiveStream,
    incoming: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    async with incoming:
        async for line in stdin_lines(receive):
            try:
                message = jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValueError:
                _log.warning("ignoring an input line that is not a JSON-RPC message")
                continue
            try:
                await incoming.send(SessionMessage(message))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return
    _log.debug("stdin ended")


async def _pump_stdout(
    outgoing: MemoryObjectReceiveStream[SessionMessage], send: anyio.abc.ByteSendStream
) -> None:
    broken = False
    async with outgoing:
        async for item in outgoing:
            if broken:
                continue  # keep draining, so no sender waits on a reader that is gone
            data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
            try:
                await send.send(data.encode() + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                _log.debug("stdout is gone: dropping the frames still to come")
                broken = True
