"""The one asyncio-only module: the `acp` SDK connection over a managed process's streams.

The SDK runs on asyncio and has no line cap, so the provider hands it a message-level transport
of its own (newline framing over the anyio pipes of the managed process, bounded by
`max_frame_bytes`) and a client whose callbacks only report safe facts back to the run. The
SDK's own waits are never trusted to end: callers race every request against process exit and
cancellation.

Importing this module imports `acp` (slow: pydantic builds the schema), so the provider loads it
lazily on its first start.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
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
)

_log = logging.getLogger("subagent_acp")

_READ_CHUNK = 1 << 20

ErrorKind = Literal["rpc-error", "connection-lost", "frame-too-long", "other"]
"""`other` covers schema-invalid answers (the SDK's validation errors) and anything else."""


class ConnectionLostError(ConnectionError):
    """The pipe to the child failed while writing a frame."""


class FrameTooLongError(ConnectionError):
    """The child sent a line longer than `max_frame_bytes`."""


class ClientSink(Protocol):
    """What the run learns from the child's callbacks: text and permission facts only."""

    def add_text(self, text: str) -> None:
        """Appends `agent_message_chunk` text to the output."""
        ...

    def decide_permission(
        self, tool_kind: str | None, options: Sequence[tuple[str, str]]
    ) -> str | None:
        """Returns the option id to select, or `None` to answer `cancelled`."""
        ...


class FramedTransport:
    """Newline-delimited JSON over the child's stdin/stdout, with a line cap.

    Malformed lines (bad JSON, bad UTF-8, non-objects, unusable ids) are logged by size and
    skipped, as the SDK would, but never crash the reader. A line over the cap ends the
    connection and is remembered so the run can classify it as `transport`.
    """

    def __init__(
        self,
        stdin: anyio.abc.ByteSendStream,
        stdout: anyio.abc.ByteReceiveStream,
        max_frame_bytes: int,
    ) -> None:
        self._stdin = stdin
        self._stdout = stdout
        self._max = max_frame_bytes
        self._buffer = bytearray()
        self._scanned = 0
        self._eof = False
        self._send_lock = anyio.Lock()
        self.overflowed = False
        """True once a line over the cap was seen; the reader stopped there."""

    async def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            async with self._send_lock:
                await self._stdin.send(data)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as error:
            _log.debug("writing a frame to the ACP child failed", exc_info=error)
            raise ConnectionLostError("the pipe to the child is closed") from error

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                return None
            message = _parse(line)
            if message is not None:
                return message

    async def close(self) -> None:
        """Nothing to do: the managed process owns and closes the pipes."""

    async def discard_rest(self) -> None:
        """Reads and drops stdout until EOF, so a child blocked on a full pipe can exit."""
        self._buffer.clear()
        while True:
            try:
                await self._stdout.receive(_READ_CHUNK)
            except (
                anyio.EndOfStream,
                anyio.ClosedResourceError,
                anyio.BrokenResourceError,
                OSError,
            ):
                return

    async def _read_line(self) -> bytearray | None:
        buffer = self._buffer
        while True:
            index = buffer.find(b"\n", self._scanned)
            if index >= 0:
                if index > self._max:
                    self._overflow()
                line = buffer[:index]
                del buffer[: index + 1]
                self._scanned = 0
                return line
            if len(buffer) > self._max:
                self._overflow()
            self._scanned = len(buffer)
            if self._eof:
                if not buffer:
                    return None
                line = buffer[:]
                buffer.clear()
                self._scanned = 0
                return line
            try:
                buffer.extend(await self._stdout.receive(_READ_CHUNK))
            except anyio.EndOfStream:
                self._eof = True
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as error:
                _log.debug("reading from the ACP child failed", exc_info=error)
                self._eof = True

    def _overflow(self) -> None:
        self.overflowed = True
        _log.warning("the ACP child sent a line over max_frame_bytes (%d); closing", self._max)
        raise FrameTooLongError("line longer than max_frame_bytes")


def _parse(line: bytearray) -> dict[str, Any] | None:
    if not line or line.isspace():
        return None
    try:
        value: object = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        _log.debug("skipped a malformed frame from the ACP child (%d bytes)", len(line))
        return None
    if not isinstance(value, dict):
        _log.debug("skipped a non-object frame from the ACP child")
        return None
    message: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    if isinstance(message.get("id"), list | dict) or (
        "method" in message and not isinstance(message["method"], str)
    ):
        _log.debug("skipped a frame with an unusable id or method")
        return None
    return message


class _Client:
    """The ACP client side: collects text, answers permissions, refuses fs and terminal."""

    def __init__(self, sink: ClientSink) -> None:
        self._sink = sink

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if getattr(update, "session_update", None) != "agent_message_chunk":
            return
        content = getattr(update, "content", None)
        if isinstance(content, TextContentBlock):
            self._sink.add_text(content.text)

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

    def __init__(self, sink: ClientSink, transport: FramedTransport) -> None:
        self.transport = transport
        self._conn = ClientSideConnection(cast("Client", _Client(sink)), transport)
        _quiet_notifications(self._conn)

    async def initialize(self) -> None:
        await self._conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
        )

    async def new_session(self, cwd: str) -> object:
        """Returns the session id exactly as the child sent it (the caller checks it)."""
        response = await self._conn.new_session(cwd=cwd, mcp_servers=[])
        return response.session_id

    async def prompt(self, session_id: str, text: str) -> str:
        """Returns the (schema-valid) ACP stop reason."""
        response = await self._conn.prompt(
            session_id=session_id, prompt=[TextContentBlock(type="text", text=text)]
        )
        return str(response.stop_reason)

    async def cancel(self, session_id: str) -> None:
        await self._conn.cancel(session_id=session_id)

    async def close(self) -> None:
        await self._conn.close()


def _quiet_notifications(conn: ClientSideConnection) -> None:
    """Keeps failed notifications (e.g. a schema-invalid `session/update`) in our logger.

    The SDK logs them with `logging.exception` on the root logger, which would copy child text
    (the method name, the invalid payload) into the host's general log. If the SDK's internals
    ever change shape this is skipped and the SDK's own behaviour stays.
    """
    inner: object = getattr(conn, "_conn", None)
    handler: object = getattr(inner, "_handler", None)
    if inner is None or not callable(handler):
        return
    route = cast("Callable[[str, Any, bool], Awaitable[Any]]", handler)

    async def quiet(method: str, params: Any, is_notification: bool) -> Any:
        if not is_notification:
            return await route(method, params, is_notification)
        try:
            return await route(method, params, is_notification)
        except Exception as error:
            _log.debug("dropped a notification from the ACP child", exc_info=error)
            return None

    setattr(inner, "_handler", quiet)  # noqa: B010


def classify_error(error: BaseException) -> ErrorKind:
    """Sorts an exception from a request into the kinds the provider's rules distinguish."""
    if isinstance(error, RequestError):
        return "rpc-error"
    if isinstance(error, FrameTooLongError):
        return "frame-too-long"
    if isinstance(error, ConnectionError | EOFError):
        return "connection-lost"
    return "other"


OwnerTask = asyncio.Task[None]
"""The task that owns one run's process and connection."""


def spawn_owner(body: Callable[[], Awaitable[None]]) -> OwnerTask:
    """Runs a run's owner coroutine as its own task; the run keeps the reference and awaits it."""

    async def run() -> None:
        await body()

    return asyncio.get_running_loop().create_task(run(), name="subagent_acp.run")
