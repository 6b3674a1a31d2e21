"""Newline-delimited JSON-RPC 2.0 frames: structural classification, builders, reader, writer.

Both ends use it: the client reading a runtime's stdout, and a runtime reading its stdin. Lines
come from the shared bounded `subagent_core.kit.LineReader` (split on bytes before decoding, so a
character split across reads survives); each line is stripped (tolerating `\\r`), blank lines
are skipped, and a line that is not a JSON object is ignored: nothing a peer writes can crash
the reader. A line longer than the frame limit raises `FrameTooLargeError` after it was
discarded, so the caller chooses: stop (a client) or skip it (a server).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import TypeAlias

import anyio
import anyio.abc
from subagent_core.kit import DEFAULT_MAX_FRAME_BYTES, LineReader

from ._json import JSONObject, JSONValue, as_object, dumps, loads

RequestId: TypeAlias = "str | int | float"
"""A request id: the client always sends `req_<32 hex>`; peers may use numbers."""


def _empty_object() -> JSONObject:
    return {}


@dataclass(frozen=True, slots=True)
class Request:
    """A call expecting a response: string or number `id` and string `method`."""

    id: RequestId
    method: str
    params: JSONObject = field(default_factory=_empty_object)
    """The `params` object; absent or non-object params read as `{}`."""


@dataclass(frozen=True, slots=True)
class Notification:
    """A one-way message: `method` without an `id`."""

    method: str
    params: JSONObject = field(default_factory=_empty_object)


@dataclass(frozen=True, slots=True)
class ErrorObject:
    """The `error` member of a response, kept whole."""

    code: int
    message: str
    data: JSONValue = None


@dataclass(frozen=True, slots=True)
class Response:
    """An answer to a request: `result`, or `error` when that member is present."""

    id: JSONValue
    result: JSONValue = None
    error: ErrorObject | None = None


Frame: TypeAlias = "Request | Response | Notification"


def new_request_id() -> str:
    """`req_` followed by 32 lowercase hex characters."""
    return "req_" + secrets.token_hex(16)


def _is_id(value: JSONValue) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _error_object(value: JSONValue) -> ErrorObject:
    error = as_object(value) or {}
    code = error.get("code")
    message = error.get("message")
    return ErrorObject(
        code=code if isinstance(code, int) and not isinstance(code, bool) else -32603,
        message=message if isinstance(message, str) else "",
        data=error.get("data"),
    )


def classify(value: JSONValue) -> Frame | None:
    """Classifies a parsed JSON value structurally; `None` when it is not a frame.

    string/number `id` + string `method` → request; else an `id` member → response; else a
    string `method` → notification.
    """
    frame = as_object(value)
    if frame is None:
        return None
    method = frame.get("method")
    params = as_object(frame.get("params")) or {}
    if "id" in frame:
        frame_id = frame["id"]
        if isinstance(method, str) and _is_id(frame_id):
            return Request(frame_id, method, params)  # type: ignore[arg-type]
        if frame.get("error") is not None:
            return Response(frame_id, None, _error_object(frame["error"]))
        return Response(frame_id, frame.get("result"))
    if isinstance(method, str):
        return Notification(method, params)
    return None


def parse_frame(line: str | bytes) -> Frame | None:
    """Parses one line; `None` for blank, non-JSON, non-object or unclassifiable lines."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    if not text:
        return None
    try:
        value = loads(text)
    except (ValueError, RecursionError):
        return None
    return classify(value)


def encode_frame(frame: JSONObject) -> bytes:
    """One compact JSON line, UTF-8, newline-terminated."""
    return (dumps(frame) + "\n").encode("utf-8")


def request_frame(request_id: RequestId, method: str, params: JSONObject) -> JSONObject:
    """`{"jsonrpc":"2.0","id":…,"method":…,"params":…}` in that key order."""
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def notification_frame(method: str, params: JSONObject) -> JSONObject:
    """`{"jsonrpc":"2.0","method":…,"params":…}`."""
    return {"jsonrpc": "2.0", "method": method, "params": params}


def result_frame(request_id: RequestId, result: JSONValue) -> JSONObject:
    """`{"jsonrpc":"2.0","id":…,"result":…}`."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_frame(
    request_id: RequestId | None, code: int, message: str, data: JSONValue = None
) -> JSONObject:
    """`{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…[,"data":…]}}`."""
    error: JSONObject = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


class FrameReader:
    """Reads frames from a byte stream, skipping every line that is not a frame.

    Cancel-safe: a cancelled `receive()` loses nothing. After `FrameTooLargeError` the
    over-long line is gone and the reader is still usable: a server may call `receive()` again
    to skip it; a client stops.
    """

    def __init__(
        self,
        stream: anyio.abc.ByteReceiveStream,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self._lines = LineReader(stream, max_frame_bytes=max_frame_bytes)

    async def receive(self) -> Frame:
        """The next frame.

        Raises:
            anyio.EndOfStream: input ended or broke (an unterminated last line is still
                delivered).
            subagent_core.kit.FrameTooLargeError: a line exceeded the limit (and was discarded).
        """
        while True:
            try:
                line = await self._lines.receive_line()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise anyio.EndOfStream from None
            frame = parse_frame(line)
            if frame is not None:
                return frame

    def __aiter__(self) -> FrameReader:
        return self

    async def __anext__(self) -> Frame:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class FrameWriter:
    """Writes whole frames to a byte stream, one at a time."""

    def __init__(self, stream: anyio.abc.ByteSendStream) -> None:
        self._stream = stream
        self._lock = anyio.Lock()

    async def send(self, frame: JSONObject) -> None:
        """Writes one frame.

        Raises:
            anyio.BrokenResourceError, anyio.ClosedResourceError, OSError: the stream is gone.
        """
        data = encode_frame(frame)
        async with self._lock:
            await self._stream.send(data)

    async def send_bytes(self, data: bytes) -> None:
        """Writes raw bytes between frames (fakes use it to misbehave on purpose)."""
        async with self._lock:
            await self._stream.send(data)

    async def send_request(self, request_id: RequestId, method: str, params: JSONObject) -> None:
        """Writes a request frame."""
        await self.send(request_frame(request_id, method, params))

    async def send_notification(self, method: str, params: JSONObject) -> None:
        """Writes a notification frame."""
        await self.send(notification_frame(method, params))

    async def send_result(self, request_id: RequestId, result: JSONValue) -> None:
        """Writes a success response."""
        await self.send(result_frame(request_id, result))

    async def send_error(
        self, request_id: RequestId | None, code: int, message: str, data: JSONValue = None
    ) -> None:
        """Writes an error response."""
        await self.send(error_frame(request_id, code, message, data))

    async def aclose(self) -> None:
        """Closes the stream (EOF for the peer); a dead stream is fine."""
        try:
            await self._stream.aclose()
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
