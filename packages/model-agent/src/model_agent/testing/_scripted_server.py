"""A real OpenAI-compatible streaming server on loopback, answering from a script.

Plain HTTP/1.1 on anyio sockets (keep-alive, chunked SSE responses) so the client under test
talks to a real wire: the same frames, chunk shapes and failure modes a real endpoint shows.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from ._script import Reply, Rule, parse_script

_MAX_HEADER_BYTES = 64 * 1024
_MAX_BODY_BYTES = 64 * 1024 * 1024
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    408: "Request Timeout",
    411: "Length Required",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class _Drop(Exception):
    """Close the connection now, without finishing the response (with RST when `reset`)."""

    def __init__(self, *, reset: bool = False) -> None:
        super().__init__()
        self.reset = reset


class ScriptedModelServer:
    """The running server: its address and what it observed."""

    def __init__(self, rules: Sequence[Rule], port: int) -> None:
        self._rules = tuple(rules)
        self.port = port
        """The ephemeral TCP port on 127.0.0.1."""
        self._positions = [0] * len(self._rules)
        self._uses = [0] * len(self._rules)
        self._requests: list[dict[str, Any]] = []
        self._traceparents: list[str | None] = []
        self._in_flight = 0
        self.max_in_flight = 0
        """The most chat requests being answered at the same moment."""
        self._arrivals: list[tuple[int, anyio.Event]] = []
        self._clock = 0
        self.connection_count = 0
        """TCP connections accepted (a pooling client reuses one across requests)."""
        self._spans: list[list[Any]] = []
        """[first user text, start tick, end tick or None] per request, for `max_in_flight_for`."""

    @property
    def base_url(self) -> str:
        """What an OpenAI-compatible client takes as its base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def request_count(self) -> int:
        """Chat-completions requests received so far (retries included)."""
        return len(self._requests)

    @property
    def requests(self) -> tuple[dict[str, Any], ...]:
        """The decoded JSON bodies of every request received, in arrival order."""
        return tuple(self._requests)

    @property
    def traceparents(self) -> tuple[str | None, ...]:
        """The W3C `traceparent` header of every request received (None when absent), in order."""
        return tuple(self._traceparents)

    @property
    def response_formats(self) -> tuple[object, ...]:
        """The `response_format` of every request received (None when absent), in order."""
        return tuple(body.get("response_format") for body in self._requests)

    @property
    def in_flight(self) -> int:
        """Requests being answered right now."""
        return self._in_flight

    def count(self, match: str) -> int:
        """Requests answered by the rule whose `match` is this text."""
        return sum(
            uses for rule, uses in zip(self._rules, self._uses, strict=True) if rule.match == match
        )

    def in_flight_for(self, text: str) -> int:
        """Requests being answered now whose first user message contains `text`."""
        return sum(1 for first_user, _, end in self._spans if end is None and text in first_user)

    def max_in_flight_for(self, text: str) -> int:
        """The most requests in flight at once among those whose first user message contains
        `text` (e.g. the children of one delegation)."""
        edges: list[tuple[int, int]] = []
        for first_user, start, end in self._spans:
            if text in first_user:
                edges.append((start, 1))
                if end is not None:
                    edges.append((end, -1))
        peak = current = 0
        for _, step in sorted(edges):
            current += step
            peak = max(peak, current)
        return peak

    async def wait_for_requests(self, count: int) -> None:
        """Returns once at least `count` requests have arrived (for ordering in tests)."""
        if len(self._requests) >= count:
            return
        event = anyio.Event()
        self._arrivals.append((count, event))
        await event.wait()

    def _arrived(self, body: dict[str, Any], headers: Mapping[str, str]) -> None:
        self._requests.append(body)
        self._traceparents.append(headers.get("traceparent"))
        reached = [item for item in self._arrivals if item[0] <= len(self._requests)]
        for item in reached:
            self._arrivals.remove(item)
            item[1].set()

    def _pick(self, body: Mapping[str, Any]) -> tuple[Reply, int, int] | None:
        """The reply, its rule's index and the request's number within that rule."""
        first_user = _first_user_text(body)
        for index, rule in enumerate(self._rules):
            if rule.match in first_user:
                self._uses[index] += 1
                return self._next_reply(index), index, self._uses[index]
        return None

    def _next_reply(self, index: int) -> Reply:
        """Consumes one use of the rule's current reply; the last reply repeats forever."""
        replies = self._rules[index].replies
        position = self._positions[index]
        offset = 0
        for reply in replies:
            if position < offset + reply.times:
                self._positions[index] += 1
                return reply
            offset += reply.times
        return replies[-1]

    async def serve_connection(self, stream: anyio.abc.ByteStream) -> None:
        """Answers the requests of one accepted connection until it closes."""
        self.connection_count += 1
        async with stream:
            reader = BufferedByteReceiveStream(stream)
            try:
                while await self._serve_request(reader, stream):
                    pass
            except _Drop as drop:
                if drop.reset:
                    _abort_with_reset(stream)
            except (
                anyio.EndOfStream,
                anyio.IncompleteRead,
                anyio.BrokenResourceError,
                anyio.ClosedResourceError,
                anyio.DelimiterNotFound,
                OSError,
            ):
                pass

    async def _serve_request(
        self, reader: BufferedByteReceiveStream, stream: anyio.abc.ByteStream
    ) -> bool:
        """Answers one request; False when the connection must close."""
        head = await reader.receive_until(b"\r\n\r\n", _MAX_HEADER_BYTES)
        lines = head.decode("latin-1").split("\r\n")
        method, _, rest = lines[0].partition(" ")
        path = rest.rpartition(" ")[0]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            await _send_json(stream, 411, {"error": {"message": "length required"}}, close=True)
            return False
        try:
            length = int(headers.get("content-length", "0") or "0")
        except ValueError:
            length = -1
        if not 0 <= length <= _MAX_BODY_BYTES:
            await _send_json(stream, 400, _error_body("bad Content-Length"), close=True)
            return False
        raw = await reader.receive_exactly(length) if length else b""
        keep_alive = headers.get("connection", "").lower() != "close"
        if method != "POST" or not path.split("?")[0].endswith("/chat/completions"):
            await _send_json(stream, 404, {"error": {"message": "not found"}}, close=not keep_alive)
            return keep_alive
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError
        except ValueError:
            await _send_json(stream, 400, _error_body("invalid JSON body"), close=not keep_alive)
            return keep_alive
        body = cast(dict[str, Any], body)
        if not _valid_response_format(body.get("response_format")):
            # What a real endpoint does with a malformed `response_format`: 400, not a guess.
            self._arrived(body, headers)
            await _send_json(
                stream, 400, _error_body("invalid response_format"), close=not keep_alive
            )
            return keep_alive
        self._arrived(body, headers)
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        self._clock += 1
        span: list[Any] = [_first_user_text(body), self._clock, None]
        self._spans.append(span)
        try:
            picked = self._pick(body)
            if picked is None:
                error = _error_body("no scripted reply matches this conversation")
                await _send_json(stream, 400, error, close=not keep_alive)
                return keep_alive
            reply, rule_index, request_number = picked
            await self._answer(stream, reader, body, reply, (rule_index, request_number))
        finally:
            self._in_flight -= 1
            self._clock += 1
            span[2] = self._clock
        return keep_alive

    async def _answer(
        self,
        stream: anyio.abc.ByteStream,
        reader: BufferedByteReceiveStream,
        body: Mapping[str, Any],
        reply: Reply,
        position: tuple[int, int],
    ) -> None:
        if reply.first_byte_delay_ms:
            await anyio.sleep(reply.first_byte_delay_ms / 1000)
        if reply.drop == "before-response":
            raise _Drop(reset=reply.reset)
        if reply.hang == "before-response":
            await _hang(reader)
        if reply.status is not None:
            payload = reply.status_body
            if payload is None:
                payload = _error_body(f"scripted status {reply.status}")
            await _send_json(stream, reply.status, payload, close=False)
            return
        head = (
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: text/event-stream; charset=utf-8\r\n"
            "Cache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\n"
            "\r\n"
        )
        await stream.send(head.encode("ascii"))
        if reply.drop == "after-headers":
            raise _Drop(reset=reply.reset)
        if reply.hang == "after-headers":
            await _hang(reader)
        frames = _Frames(stream, str(body.get("model", "scripted-model")), reply.delay_ms)
        for _ in range(reply.keepalives):
            await frames.keepalive()
        await frames.chunk({"role": "assistant", "content": ""}, pace=False)
        for piece in _split(reply.reasoning, reply.reasoning_chunks):
            await frames.chunk({"reasoning_content": piece})
        if reply.flood_event_bytes:
            await frames.flood_event(reply.flood_event_bytes)
        for piece in _split(_answer_text(body, reply), reply.chunks):
            await frames.chunk({"content": piece})
        sent = 0
        while sent < reply.flood_text_bytes:
            piece = _FLOOD_PIECE[: reply.flood_text_bytes - sent]
            await frames.chunk({"content": piece})
            sent += len(piece)
        if reply.drop == "after-text":
            raise _Drop(reset=reply.reset)
        if reply.hang == "after-text":
            await _hang(reader)
        if reply.error is not None:
            await frames.raw(b"data: " + json.dumps({"error": reply.error}).encode() + b"\n\n")
            await frames.end()
            return
        if reply.malformed:
            await frames.raw(b'data: {"choices": [\n\n')
            await frames.end()
            return
        rule_index, request_number = position
        for index, call in enumerate(reply.tool_calls):
            call_id = call.id or f"call_{rule_index}_{request_number}_{index}"
            head_delta = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            await frames.chunk({"tool_calls": [head_delta]})
            for piece in _split(call.arguments, 2):
                await frames.chunk(
                    {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                )
        finish = reply.finish_reason
        if finish is None:
            finish = "tool_calls" if reply.tool_calls else "stop"
        if finish:  # "" scripts a stream that never says why it ended
            await frames.chunk({}, finish_reason=finish)
        usage: dict[str, Any] = (
            dict(reply.usage) if reply.usage is not None else _usage(body, reply)
        )
        await frames.usage(usage)
        if reply.done:
            await frames.raw(b"data: [DONE]\n\n")
        await frames.end()


class _Frames:
    """Writes SSE frames as HTTP chunks, shaped like a real endpoint's."""

    def __init__(self, stream: anyio.abc.ByteStream, model: str, delay_ms: int) -> None:
        self._stream = stream
        self._model = model
        self._delay = delay_ms / 1000
        self._id = f"chatcmpl-{time.monotonic_ns()}"
        self._created = int(time.time())
        self._sent_any = False

    async def keepalive(self) -> None:
        """A comment frame: liveness only; paced like content so slow streams can idle."""
        if self._delay and self._sent_any:
            await anyio.sleep(self._delay)
        self._sent_any = True
        await self.raw(b": keep-alive\n\n")

    async def raw(self, data: bytes) -> None:
        await self._stream.send(b"%x\r\n%s\r\n" % (len(data), data))

    async def chunk(
        self, delta: Mapping[str, Any], *, finish_reason: str | None = None, pace: bool = True
    ) -> None:
        if pace and self._delay and self._sent_any:
            await anyio.sleep(self._delay)
        self._sent_any = True
        payload = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "system_fingerprint": "fp_scripted",
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        await self.raw(b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n")

    async def usage(self, usage: Mapping[str, Any]) -> None:
        payload: dict[str, Any] = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "system_fingerprint": "fp_scripted",
            "choices": [],
            "usage": {**usage, "total_tokens": sum(int(usage.get(k, 0)) for k in _TOKEN_KEYS)},
        }
        await self.raw(b"data: " + json.dumps(payload).encode() + b"\n\n")

    async def flood_event(self, total: int) -> None:
        """One event of `total` bytes of `data:` lines (64 KiB each), generated as it goes."""
        line = b"data: " + _FLOOD_PIECE.encode() + b"\n"
        sent = 0
        while sent < total:
            await self.raw(line * 16)
            sent += 16 * len(line)
        await self.raw(b"\n")

    async def end(self) -> None:
        await self._stream.send(b"0\r\n\r\n")


_TOKEN_KEYS = ("prompt_tokens", "completion_tokens")
_FLOOD_PIECE = "x" * 65536
"""What a flood repeats: the size of one network read, so the server holds only this."""


def _split(text: str, parts: int) -> list[str]:
    if not text:
        return []
    parts = min(parts, len(text))
    size, extra = divmod(len(text), parts)
    pieces: list[str] = []
    start = 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def _usage(body: Mapping[str, Any], reply: Reply) -> dict[str, int]:
    """Deterministic token counts: about four characters per token."""
    prompt = len(json.dumps(body.get("messages", []), ensure_ascii=False))
    completion = len(_answer_text(body, reply)) + len(reply.reasoning)
    completion += sum(len(call.name) + len(call.arguments) for call in reply.tool_calls)
    return {"prompt_tokens": prompt // 4 + 1, "completion_tokens": completion // 4 + 1}


def _asks_for_json(body: Mapping[str, Any]) -> bool:
    requested = body.get("response_format")
    return isinstance(requested, Mapping) and cast(Mapping[str, Any], requested).get("type") in (
        "json_schema",
        "json_object",
    )


def _answer_text(body: Mapping[str, Any], reply: Reply) -> str:
    """The reply's `json` when the request asks for JSON and the script gives one, else the
    last user message with `echo_prompt`, else `text`."""
    if reply.json is not None and _asks_for_json(body):
        return json.dumps(reply.json, ensure_ascii=False, separators=(",", ":"))
    if reply.echo_prompt:
        texts = _user_texts(body)
        return texts[-1] if texts else ""
    return reply.text


def _valid_response_format(value: object) -> bool:
    """Absent, `text`, `json_object`, or `json_schema` with a `name` and an object `schema`."""
    if value is None:
        return True
    if not isinstance(value, Mapping):
        return False
    requested = cast(Mapping[str, Any], value)
    kind = requested.get("type")
    if kind in ("text", "json_object"):
        return True
    if kind != "json_schema":
        return False
    spec = requested.get("json_schema")
    if not isinstance(spec, Mapping):
        return False
    spec = cast(Mapping[str, Any], spec)
    return isinstance(spec.get("name"), str) and isinstance(spec.get("schema"), Mapping)


def _error_body(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


async def _send_json(
    stream: anyio.abc.ByteStream, status: int, payload: Any, *, close: bool
) -> None:
    data = json.dumps(payload).encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n" + ("Connection: close\r\n" if close else "") + "\r\n"
    )
    await stream.send(head.encode("ascii") + data)


def _abort_with_reset(stream: anyio.abc.ByteStream) -> None:
    """Zero linger: closing then sends RST, so the client sees a connection reset."""
    raw = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
    if raw is not None:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def _hang(reader: BufferedByteReceiveStream) -> None:
    """Holds the request open until the client goes away (or the server stops)."""
    while True:
        await reader.receive()


def _first_user_text(body: Mapping[str, Any]) -> str:
    texts = _user_texts(body)
    return texts[0] if texts else ""


def _user_texts(body: Mapping[str, Any]) -> list[str]:
    """The text of each user message of the conversation, in order."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    texts: list[str] = []
    for message in cast(list[Any], messages):
        if isinstance(message, Mapping) and cast(Mapping[str, Any], message).get("role") == "user":
            content = cast(Mapping[str, Any], message).get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                parts = [
                    str(cast(Mapping[str, Any], part).get("text", ""))
                    for part in cast(list[Any], content)
                    if isinstance(part, Mapping)
                ]
                texts.append("".join(parts))
            else:
                texts.append("")
    return texts


@asynccontextmanager
async def open_scripted_model_server(
    script: object, *, port: int = 0
) -> AsyncGenerator[ScriptedModelServer]:
    """Serves `script` (decoded JSON, see `parse_script`) on 127.0.0.1 until the block ends.

    Raises:
        ScriptError: the script is malformed.
    """
    rules = parse_script(script)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    async with listener:
        bound = listener.extra(anyio.abc.SocketAttribute.local_port)
        server = ScriptedModelServer(rules, bound)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(listener.serve, server.serve_connection)
                try:
                    yield server
                finally:
                    group.cancel_scope.cancel()
        except BaseExceptionGroup as group_error:
            # Connection handlers swallow their own errors, so a lone error is the block's own:
            # re-raise it bare so callers see what they raised.
            if len(group_error.exceptions) == 1:
                raise group_error.exceptions[0] from None
            raise
