"""The `acp` SDK connection over a managed process's streams.

The SDK gets a message-level transport of ours (`_transport.ChildTransport`: bounded framing,
bounded inbound requests, ordered updates) and a client whose callbacks only report safe facts
back to the run. The SDK's own waits are never trusted to end: callers race every request
against process exit and cancellation.

Importing this module imports `acp` (slow: pydantic builds the schema), so the provider loads it
lazily on its first start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, cast

import anyio
import anyio.abc
from acp import PROTOCOL_VERSION, RequestError
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallUpdate,
    Usage,
)
from subagent_core import LineReader

from ._facts import AUTH_REQUIRED_CODE
from ._transport import ChildTransport, SessionUpdate

_READ_CHUNK = 1 << 20

ErrorKind = Literal["auth-required", "rpc-error", "connection-lost", "other"]
"""`other` covers schema-invalid answers (the SDK's validation errors) and anything else."""


class ClientSink(Protocol):
    """What the run learns from the child: updates, text and permission facts only."""

    def on_update(self, update: SessionUpdate) -> None:
        """Takes one validated `session/update` received before the prompt's answer."""
        ...

    def decide_permission(
        self, tool_kind: str | None, options: Sequence[tuple[str, str]]
    ) -> str | None:
        """Returns the option id to select, or `None` to answer `cancelled`."""
        ...


async def discard_rest(stdout: anyio.abc.ByteReceiveStream) -> None:
    """Reads and drops stdout until EOF, so a child blocked on a full pipe can exit."""
    while True:
        try:
            await stdout.receive(_READ_CHUNK)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return


class _Client:
    """The ACP client's request handlers: permissions answered, fs and terminal refused.

    `session/update` never reaches here: the transport delivers it in arrival order.
    """

    def __init__(self, sink: ClientSink) -> None:
        self._sink = sink

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        choices = [(option.option_id, str(option.kind)) for option in options]
        selected = self._sink.decide_permission(tool_call.kind, choices)
        if selected is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=selected, outcome="selected")
        )

    # Not advertised (no client capabilities). fs and extension methods are simply absent,
    # so the SDK answers "method not found"; the SDK would answer the optional terminal methods
    # with `null` when absent, so they refuse explicitly.
    async def create_terminal(self, **kwargs: Any) -> None:
        raise RequestError.method_not_found("terminal/create")

    async def terminal_output(self, **kwargs: Any) -> None:
        raise RequestError.method_not_found("terminal/output")

    async def release_terminal(self, **kwargs: Any) -> None:
        raise RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(self, **kwargs: Any) -> None:
        raise RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, **kwargs: Any) -> None:
        raise RequestError.method_not_found("terminal/kill")


class Session:
    """One SDK client connection to one child."""

    def __init__(
        self,
        sink: ClientSink,
        stdin: anyio.abc.ByteSendStream,
        stdout: anyio.abc.ByteReceiveStream,
        *,
        max_frame_bytes: int,
        write_timeout_seconds: float,
    ) -> None:
        self.transport = ChildTransport(
            LineReader(stdout, max_frame_bytes=max_frame_bytes),
            stdin,
            on_update=sink.on_update,
            write_timeout_seconds=write_timeout_seconds,
        )
        self._conn = ClientSideConnection(cast("Client", _Client(sink)), self.transport)

    async def initialize(self) -> None:
        await self._conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
        )

    async def new_session(self, cwd: str) -> object:
        """Returns the session id exactly as the child sent it (the caller checks it)."""
        response = await self._conn.new_session(cwd=cwd, mcp_servers=[])
        return response.session_id

    async def prompt(self, session_id: str, text: str) -> tuple[str, Usage | None]:
        """Returns the (schema-valid) ACP stop reason and the turn's usage, if reported."""
        response = await self._conn.prompt(
            session_id=session_id, prompt=[TextContentBlock(type="text", text=text)]
        )
        return str(response.stop_reason), response.usage

    async def cancel(self, session_id: str) -> None:
        await self._conn.cancel(session_id=session_id)

    async def close(self) -> None:
        await self._conn.close()


def classify_error(error: BaseException) -> ErrorKind:
    """Sorts an exception from a request into the kinds the provider's rules distinguish."""
    if isinstance(error, RequestError):
        return "auth-required" if error.code == AUTH_REQUIRED_CODE else "rpc-error"
    if isinstance(error, ConnectionError | EOFError):
        return "connection-lost"
    return "other"
