"""A loopback Anthropic Messages stub: the one remote service the real CLI is tested against.

The Claude Code CLI reaches its model through `ANTHROPIC_BASE_URL`; pointing it at this stub on
127.0.0.1 runs the real CLI end to end with no key and no network. Each model request takes the
next scripted `Turn` (the last one repeats, so a retried error stays an error) and is answered
as the Messages API streams: server-sent events `message_start` … `message_stop`, or an error
status with a JSON body. A `stall` turn streams its first text and then holds the connection
open until the stub closes, so a test can cancel a run that is mid-answer.

Standard library only (`http.server` in a thread), so tests and the harness demo need nothing
else. Every request is recorded (path, lower-cased headers, parsed body) for assertions such as
"the stub never saw an `x-api-key` header".
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, cast

BlockKind = Literal["text", "thinking", "tool_use"]


@dataclass(frozen=True, slots=True)
class Block:
    """One content block of a scripted answer."""

    kind: BlockKind
    text: str = ""
    """Text (or thinking) streamed in `chunks` pieces."""
    name: str = ""
    """The tool's name, for `tool_use`."""
    input: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """The tool's input, for `tool_use` (streamed as one `input_json_delta`)."""
    tool_id: str = "toolu_stub_1"


@dataclass(frozen=True, slots=True)
class Turn:
    """How the stub answers one model request."""

    blocks: tuple[Block, ...] = ()
    stop_reason: str | None = "end_turn"
    status: int = 200
    """Not 200: answer with this status and `body`, no stream."""
    body: str = ""
    input_tokens: int = 11
    output_tokens: int = 7
    cache_read_input_tokens: int = 5
    stall: bool = False
    """Stream the first text block, then hold the connection open until the stub closes."""
    chunks: int = 2
    """How many `text_delta` events a text block is cut into."""


def text_turn(
    text: str,
    *,
    stop_reason: str | None = "end_turn",
    input_tokens: int = 11,
    output_tokens: int = 7,
    cache_read_input_tokens: int = 5,
) -> Turn:
    """An answer of one text block."""
    return Turn(
        blocks=(Block("text", text),),
        stop_reason=stop_reason,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_input_tokens=cache_read_input_tokens,
    )


def tool_turn(name: str, tool_input: Mapping[str, Any], *, tool_id: str = "toolu_stub_1") -> Turn:
    """An answer that calls one tool (`stop_reason: tool_use`)."""
    return Turn(
        blocks=(Block("tool_use", name=name, input=dict(tool_input), tool_id=tool_id),),
        stop_reason="tool_use",
    )


def error_turn(status: int, body: str) -> Turn:
    """An HTTP error answer (for example 401 with a body that must never surface)."""
    return Turn(status=status, body=body)


def stall_turn(partial: str) -> Turn:
    """Streams `partial`, then never finishes (until the stub closes)."""
    return Turn(blocks=(Block("text", partial),), stall=True, chunks=1)


@dataclass(frozen=True, slots=True)
class Recorded:
    """One request the stub received."""

    method: str
    path: str
    headers: Mapping[str, str]
    """Header names lower-cased."""
    body: Any


class MessagesStub:
    """The stub server; a context manager (`with MessagesStub([...]) as stub: stub.url`)."""

    def __init__(self, turns: Sequence[Turn] = (), *, model: str | None = None) -> None:
        self._turns = tuple(turns) or (text_turn("PONG"),)
        self._model = model
        self._lock = threading.Lock()
        self._served = 0
        self._closing = threading.Event()
        self.requests: list[Recorded] = []
        """Everything received, in order (read after the run)."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="messages-stub", daemon=True
        )

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>` — the CLI's `ANTHROPIC_BASE_URL`."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def model_requests(self) -> list[Recorded]:
        """The recorded `POST /v1/messages` requests."""
        return [r for r in self.requests if r.method == "POST" and _is_messages(r.path)]

    @property
    def traceparents(self) -> list[str | None]:
        """The W3C `traceparent` header of each model request, in order (`None`: it had none)."""
        return [r.headers.get("traceparent") for r in self.model_requests]

    def set_turns(self, turns: Sequence[Turn]) -> None:
        """Replaces the script (before the run that should see it), starting from its first turn."""
        with self._lock:
            self._turns = tuple(turns) or (text_turn("PONG"),)
            self._served = 0

    def header_seen(self, name: str) -> bool:
        """True when any request carried header `name` (case-insensitive)."""
        return any(name.lower() in r.headers for r in self.requests)

    def start(self) -> MessagesStub:
        """Starts serving in a background thread."""
        self._thread.start()
        return self

    def close(self) -> None:
        """Releases stalled streams and stops the server."""
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> MessagesStub:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- serving (handler threads) -----------------------------------------------------------

    def _record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_turn(self) -> Turn:
        with self._lock:
            turn = self._turns[min(self._served, len(self._turns) - 1)]
            self._served += 1
            return turn

    def _wait_closing(self) -> None:
        self._closing.wait(timeout=300)


def _is_messages(path: str) -> bool:
    return path.split("?", 1)[0] == "/v1/messages"


def _handler_for(stub: MessagesStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read `stub.requests` instead."""

        def _body(self) -> Any:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                return json.loads(raw) if raw else None
            except ValueError:
                return None

        def _record(self, body: Any) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            stub._record(Recorded(self.command, self.path, headers, body))  # pyright: ignore[reportPrivateUsage]

        def _json(self, status: int, payload: object) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._record(None)
            self._json(200, {})

        def do_HEAD(self) -> None:
            self._record(None)
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            body = self._body()
            self._record(body)
            path = self.path.split("?", 1)[0]
            if path == "/v1/messages/count_tokens":
                self._json(200, {"input_tokens": 11})
                return
            if path != "/v1/messages":
                self._json(404, {"type": "error", "error": {"type": "not_found_error"}})
                return
            turn = stub._next_turn()  # pyright: ignore[reportPrivateUsage]
            if turn.status != 200:
                data = turn.body.encode()
                self.send_response(turn.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            streaming = isinstance(body, dict) and bool(body.get("stream"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
            model = stub._model or _requested_model(body)  # pyright: ignore[reportPrivateUsage]
            if not streaming:
                self._json(200, _whole_message(turn, model))
                return
            self._stream(turn, model)

        def _event(self, name: str, data: Mapping[str, Any]) -> None:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        def _stream(self, turn: Turn, model: str) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            start = _whole_message(turn, model)
            start.update(content=[], stop_reason=None)
            start["usage"] = {**start["usage"], "output_tokens": 1}
            try:
                self._event("message_start", {"type": "message_start", "message": start})
                for index, block in enumerate(turn.blocks):
                    self._block(index, block, turn.chunks)
                    if turn.stall:
                        stub._wait_closing()  # pyright: ignore[reportPrivateUsage]
                        return
                self._event(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
                        "usage": {"output_tokens": turn.output_tokens},
                    },
                )
                self._event("message_stop", {"type": "message_stop"})
            except (BrokenPipeError, ConnectionResetError):
                return

        def _block(self, index: int, block: Block, chunks: int) -> None:
            if block.kind == "tool_use":
                opening: dict[str, Any] = {
                    "type": "tool_use",
                    "id": block.tool_id,
                    "name": block.name,
                    "input": {},
                }
                deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block.input)}]
            elif block.kind == "thinking":
                opening = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [{"type": "thinking_delta", "thinking": block.text}]
                deltas.append({"type": "signature_delta", "signature": "c3R1Yg=="})
            else:
                opening = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": part} for part in _cut(block.text, chunks)]
            self._event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
            for delta in deltas:
                self._event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            if stub._closing.is_set():  # pyright: ignore[reportPrivateUsage]
                return
            self._event("content_block_stop", {"type": "content_block_stop", "index": index})

    return Handler


def _requested_model(body: Any) -> str:
    """The model the request named (so the CLI prices the answer), else a fixed name."""
    model: object = cast("dict[str, object]", body).get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else "claude-stub-1"


def _cut(text: str, parts: int) -> list[str]:
    """`text` in `parts` nearly equal pieces (at least one, possibly empty)."""
    if parts <= 1 or len(text) < 2:
        return [text]
    size = -(-len(text) // parts)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _whole_message(turn: Turn, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for block in turn.blocks:
        if block.kind == "tool_use":
            content.append(
                {"type": "tool_use", "id": block.tool_id, "name": block.name, "input": block.input}
            )
        elif block.kind == "thinking":
            content.append({"type": "thinking", "thinking": block.text, "signature": "c3R1Yg=="})
        else:
            content.append({"type": "text", "text": block.text})
    return {
        "id": "msg_stub_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": turn.stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": turn.input_tokens,
            "output_tokens": turn.output_tokens,
            "cache_read_input_tokens": turn.cache_read_input_tokens,
            "cache_creation_input_tokens": 0,
        },
    }
