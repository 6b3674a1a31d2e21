"""A loopback stand-in for the OpenAI Responses API, scripted per test.

The real `codex` binary runs keyless against it: a custom model provider (`wire_api =
"responses"`, `base_url` pointing here, `env_key` naming a dummy key) sends every model turn as
a streamed `POST …/responses`, and this server answers each one with the next step of its
script. Only the model service is faked; the binary, its sandbox and its shells are real.

Steps are plain JSON objects so the harness demo and the tests share one vocabulary:

- `{"text": "PONG", "usage": {"input": 11, "cached": 3, "output": 7}}`: a streamed assistant
  message (two deltas, the completed item, `response.completed` with that usage);
- `{"exec": "touch x", "escalate": true, "justification": "…"}`: an `exec_command` function
  call; `escalate` asks to run it outside the sandbox (`sandbox_permissions:
  "require_escalated"`), which is what makes codex ask for approval;
- `{"status": 401, "body": "…"}`: a plain HTTP error (the body is what codex quotes back);
- `{"call": "delegate", "namespace": "mcp__harness", "arguments": {…}}`: a `function_call` of
  any tool the request offers; `namespace` names the tool group it belongs to (codex offers an
  MCP server's tools as the namespace `mcp__<server>`), left out for a top-level tool;
- `{"stall": true, "text": "partial"}`: starts the stream, sends `text` as a delta, then holds
  the connection open until the stub closes (a model that stopped talking);
- `{"failed": "context_length_exceeded"}`: a `response.failed` event with that error code.

When the script runs out, the last step is repeated (a retried request sees the same answer).
This module imports only the standard library.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final, cast

STUB_KEY_ENV: Final = "CODEX_STUB_API_KEY"
"""The environment variable the stub's model provider reads its (dummy) key from."""

STUB_MODEL: Final = "gpt-5"
"""A model the stub can drive: codex's default model runs in a code mode a stub cannot."""

Step = Mapping[str, Any]


class ResponsesStub:
    """One scripted Responses endpoint on `127.0.0.1`, served from a background thread."""

    def __init__(self, steps: Sequence[Step]) -> None:
        if not steps:
            raise ValueError("a stub needs at least one step")
        self._steps = [dict(step) for step in steps]
        self._lock = threading.Lock()
        self._served = 0
        self._closing = threading.Event()
        self.requests: list[dict[str, Any]] = []
        """Every request body received, parsed, in order."""
        self.authorizations: list[str | None] = []
        """The `Authorization` header of every request, in order."""
        self.traceparents: list[str | None] = []
        """The W3C `traceparent` header of every request, in order (trace propagation)."""
        self.stalled = threading.Event()
        """Set once a `stall` step has sent its partial text."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="responses-stub", daemon=True
        )

    @property
    def base_url(self) -> str:
        """The provider `base_url` (codex appends `/responses`)."""
        host, port = cast("tuple[str, int]", self._server.server_address[:2])
        return f"http://{host}:{port}/v1"

    def start(self) -> None:
        """Starts serving."""
        self._thread.start()

    def close(self) -> None:
        """Releases stalled streams and stops the server (idempotent)."""
        if self._closing.is_set():
            return
        self._closing.set()
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def _next_step(
        self, body: dict[str, Any], authorization: str | None, traceparent: str | None = None
    ) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            self.traceparents.append(traceparent)
            index = min(self._served, len(self._steps) - 1)
            self._served += 1
            return self._steps[index]

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests read the recorded requests instead."""

            def do_GET(self) -> None:
                self._send_plain(404, "not found")

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length > 0 else b""
                try:
                    body = cast("dict[str, Any]", json.loads(raw or b"{}"))
                except ValueError:
                    body = {}
                if not self.path.endswith("/responses"):
                    self._send_plain(404, "not found")
                    return
                headers = self.headers
                step = stub._next_step(
                    body, headers.get("authorization"), headers.get("traceparent")
                )
                status = step.get("status")
                if isinstance(status, int):
                    self._send_plain(status, str(step.get("body", "error")))
                    return
                self._stream(step)

            def _send_plain(self, status: int, text: str) -> None:
                data = json.dumps({"error": {"message": text, "type": "stub_error"}}).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, step: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    for event in _events(step, stub):
                        self._event(event)
                    if step.get("stall"):
                        stub.stalled.set()
                        stub._closing.wait()
                except (BrokenPipeError, ConnectionResetError):
                    return

            def _event(self, event: Mapping[str, Any]) -> None:
                data = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                self.wfile.write(data.encode())
                self.wfile.flush()

        return Handler


def _usage(step: Mapping[str, Any]) -> dict[str, Any]:
    usage = cast("Mapping[str, int]", step.get("usage") or {})
    given, cached, output = usage.get("input", 0), usage.get("cached", 0), usage.get("output", 0)
    return {
        "input_tokens": given,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": given + output,
    }


def _events(step: Mapping[str, Any], stub: ResponsesStub) -> Iterator[dict[str, Any]]:
    """The SSE events of one streamed step (a stall stops before completing)."""
    response_id = f"resp_{len(stub.requests)}"
    yield {"type": "response.created", "response": {"id": response_id}}
    failed = step.get("failed")
    if isinstance(failed, str):
        error = {"code": failed, "message": "the stub failed this response"}
        yield {"type": "response.failed", "response": {"id": response_id, "error": error}}
        return
    tool = step.get("call")
    if isinstance(tool, str):
        call: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{len(stub.requests)}",
            "call_id": f"call_{len(stub.requests)}",
            "name": tool,
            "arguments": json.dumps(step.get("arguments") or {}),
        }
        namespace = step.get("namespace")
        if isinstance(namespace, str):
            call["namespace"] = namespace
        yield {"type": "response.output_item.added", "output_index": 0, "item": call}
        yield {"type": "response.output_item.done", "output_index": 0, "item": call}
        yield {"type": "response.completed", "response": {"id": response_id, "usage": _usage(step)}}
        return
    command = step.get("exec")
    if isinstance(command, str):
        arguments: dict[str, Any] = {"cmd": command, "login": False}
        if step.get("escalate"):
            arguments["sandbox_permissions"] = "require_escalated"
            arguments["justification"] = str(step.get("justification", "needs to run"))
        call = {
            "type": "function_call",
            "id": f"fc_{len(stub.requests)}",
            "call_id": f"call_{len(stub.requests)}",
            "name": "exec_command",
            "arguments": json.dumps(arguments),
        }
        yield {"type": "response.output_item.added", "output_index": 0, "item": call}
        yield {"type": "response.output_item.done", "output_index": 0, "item": call}
        yield {"type": "response.completed", "response": {"id": response_id, "usage": _usage(step)}}
        return
    text = str(step.get("text", ""))
    item_id = f"msg_{len(stub.requests)}"
    empty: dict[str, Any] = {"type": "message", "role": "assistant", "id": item_id, "content": []}
    yield {"type": "response.output_item.added", "output_index": 0, "item": empty}
    half = len(text) // 2
    for piece in (text[:half], text[half:]):
        if piece:
            yield {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": piece,
            }
    if step.get("stall"):
        return
    done: dict[str, Any] = {**empty, "content": [{"type": "output_text", "text": text}]}
    yield {"type": "response.output_item.done", "output_index": 0, "item": done}
    yield {"type": "response.completed", "response": {"id": response_id, "usage": _usage(step)}}


@contextmanager
def open_responses_stub(steps: Sequence[Step]) -> Generator[ResponsesStub]:
    """Serves `steps` on a loopback port while the block lasts."""
    stub = ResponsesStub(steps)
    stub.start()
    try:
        yield stub
    finally:
        stub.close()


def stub_provider_overrides(
    base_url: str, *, key_env: str = STUB_KEY_ENV, retries: int | None = None
) -> dict[str, str]:
    """`CodexConfig.config_overrides` that point codex at the stub with a dummy key.

    `model_provider = "mock"` plus its definition; `model = "gpt-5"`, a model whose plain
    Responses turns a stub can drive. The key itself goes in `CodexConfig.env[key_env]`.
    `retries` sets the provider's request and stream retries (codex's own default otherwise).
    """
    extra = (
        ""
        if retries is None
        else f", request_max_retries = {retries}, stream_max_retries = {retries}"
    )
    provider = (
        f'{{ name = "stub", base_url = "{base_url}", wire_api = "responses", '
        f'env_key = "{key_env}"{extra} }}'
    )
    return {
        "model_provider": '"mock"',
        "model_providers.mock": provider,
        "model": f'"{STUB_MODEL}"',
    }
