"""A loopback model service for the real agents: four wire formats, one scripted scenario.

The suite serves it from a thread (`conftest.py`); `python model_stub.py` runs it alone, prints
its port and serves on 127.0.0.1 until stdin closes (for trying an agent by hand). Standard
library only. It answers

- OpenAI chat completions (`POST …/chat/completions`, SSE or JSON): qwen-code, opencode,
  this project's own agent (`harness acp-agent`);
- OpenAI Responses (`POST …/responses`, SSE): codex-acp, codex;
- Anthropic Messages (`POST …/v1/messages`, SSE or JSON; `count_tokens`): claude-agent-acp, claude;
- the Gemini API (`…:streamGenerateContent?alt=sse`, `:generateContent`, `:countTokens`).

The scenario (`POST /__scenario`, JSON) decides every answer until the next one:
`{"text": str}` answers text; `"write": {"path", "content"}` first calls the agent's own
file-write tool (picked by name from the tools the request offers) and answers `text` once
the conversation holds a tool result; `"chunks": n, "delay": s` streams the text in n pieces
`s` seconds apart (a cancel lands mid-stream); `"command": str` has codex run it
(`exec_command`; with `"escalate": true` asking to leave its sandbox); `"status": 401, "secret": str` refuses every
request with that status and a body holding the secret. `GET /__log` lists what was asked
(wire, path, tool names offered, whether a tool result was present, the status answered).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

WRITE_TOOLS = ("Write", "write_file", "write", "apply_patch", "create_file")
"""File-write tool names, most specific first (claude, gemini/qwen, opencode, codex)."""

_state: dict[str, Any] = {"scenario": {"text": "stub answer"}, "log": []}
_lock = threading.Lock()


def _scenario() -> dict[str, Any]:
    with _lock:
        return dict(_state["scenario"])


def _object(value: object) -> dict[str, Any]:
    """`value` when the request has a JSON object there, else an empty one."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _objects(value: object) -> list[dict[str, Any]]:
    """The JSON objects of `value` when the request has a list there (others are skipped)."""
    items = cast("list[object]", value) if isinstance(value, list) else []
    return [cast("dict[str, Any]", item) for item in items if isinstance(item, dict)]


def _tool_names(wire: str, body: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for tool in _objects(body.get("tools")):
        if wire == "gemini":
            names += [d.get("name", "") for d in _objects(tool.get("functionDeclarations"))]
        elif wire == "chat":
            names.append(_object(tool.get("function")).get("name", ""))
        else:
            names.append(tool.get("name", ""))
    return names


def _tool_kinds(body: dict[str, Any]) -> dict[str, str]:
    """Responses API: tool name → `function` or `custom` (apply_patch may be either)."""
    return {
        tool.get("name", ""): tool.get("type", "function") for tool in _objects(body.get("tools"))
    }


def _has_tool_result(wire: str, body: dict[str, Any]) -> bool:
    text = json.dumps(body)
    markers = {
        "chat": '"role": "tool"',
        "responses": "_call_output",
        "anthropic": '"tool_result"',
        "gemini": '"functionResponse"',
    }
    return markers[wire] in text


def _tool_properties(wire: str, body: dict[str, Any], name: str) -> set[str]:
    """Chat completions: the parameter names the tool `name` declares (else none)."""
    if wire != "chat":
        return set()
    for tool in _objects(body.get("tools")):
        function = _object(tool.get("function"))
        if function.get("name") == name:
            return set(_object(_object(function.get("parameters")).get("properties")))
    return set()


def _write_arguments(
    name: str, path: str, content: str, properties: set[str] | None = None
) -> dict[str, Any]:
    if properties and "path" in properties and "file_path" not in properties:
        # This project's own agent: a path relative to its workspace.
        return {"path": path.rsplit("/", 1)[-1], "content": content}
    if name == "write":
        return {"filePath": path, "content": content}
    if name == "apply_patch":
        lines = "".join(f"+{line}\n" for line in content.splitlines())
        return {"input": f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"}
    return {"file_path": path, "content": content}


class Handler(BaseHTTPRequestHandler):
    """One request: control endpoints, else the wire the path names."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the log endpoint tells what was asked."""

    def _send_json(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        """`/__log`, or a model list (some agents ask which models exist)."""
        if self.path.startswith("/__log"):
            with _lock:
                self._send_json(200, list(_state["log"]))
            return
        self._send_json(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})

    def do_POST(self) -> None:
        """Routes by path to the wire format."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: dict[str, Any]  # the agent's request: JSON, an object on every wire
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        if self.path == "/__scenario":
            with _lock:
                _state["scenario"] = body
                _state["log"] = []
            self._send_json(200, {"ok": True})
            return
        path = self.path.split("?")[0]
        if path.endswith("/chat/completions"):
            wire = "chat"
        elif path.endswith("/responses"):
            wire = "responses"
        elif path.endswith("/messages/count_tokens"):
            self._send_json(200, {"input_tokens": 10})
            return
        elif path.endswith("/messages"):
            wire = "anthropic"
        elif ":countTokens" in path:
            self._send_json(200, {"totalTokens": 10})
            return
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            wire = "gemini"
        else:
            self._send_json(404, {"error": {"message": "unknown path"}})
            return
        scenario = _scenario()
        tools = _tool_names(wire, body)
        has_result = _has_tool_result(wire, body)
        status = int(scenario.get("status") or 200)
        with _lock:
            _state["log"].append(
                {
                    "wire": wire,
                    "path": path,
                    "tools": tools,
                    "tool_result": has_result,
                    "status": status,
                    # Whether the request carries the scenario's `expect` text (a tool's output).
                    "expected": bool(scenario.get("expect"))
                    and str(scenario["expect"]) in raw.decode("utf-8", "replace"),
                }
            )
            if scenario.get("debug"):
                _state["log"].append({"body": body})
        if status != 200:
            self._refuse(wire, status, str(scenario.get("secret", "")))
            return
        call = None
        write = scenario.get("write")
        if write and not has_result:
            name = next((n for n in WRITE_TOOLS if n in tools), None)
            if name is not None:
                properties = _tool_properties(wire, body, name)
                call = (name, _write_arguments(name, write["path"], write["content"], properties))
        command = scenario.get("command")
        if command and not has_result and "exec_command" in tools:
            arguments: dict[str, Any] = {"cmd": command}
            if scenario.get("escalate"):
                # Asking to run outside the sandbox is what makes codex ask for approval.
                arguments |= {"sandbox_permissions": "require_escalated", "justification": "go"}
            call = ("exec_command", arguments)
        stream = wire in ("responses",) or bool(body.get("stream")) or "stream" in path.lower()
        pieces = _pieces(str(scenario.get("text", "")), int(scenario.get("chunks") or 1))
        # Only the agent's turn (a request offering tools) is slow: side requests (titles,
        # classifiers) answer at once, so a cancel lands in the turn's stream.
        delay = float(scenario.get("delay") or 0.0) if tools else 0.0
        try:
            getattr(self, f"_{wire}")(body, pieces, delay, call, stream)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _refuse(self, wire: str, status: int, secret: str) -> None:
        message = f"invalid credentials {secret}"
        if wire == "anthropic":
            payload: object = {
                "type": "error",
                "error": {"type": "authentication_error", "message": message},
            }
        elif wire == "gemini":
            payload = [{"error": {"code": status, "message": message, "status": "UNAUTHENTICATED"}}]
        else:
            payload = {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            }
        self._send_json(status, payload)

    # -- streaming helpers -----------------------------------------------------------------------

    def _open_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _event(self, data: object, event: str | None = None) -> None:
        frame = (f"event: {event}\n" if event else "") + f"data: {json.dumps(data)}\n\n"
        self.wfile.write(frame.encode())
        self.wfile.flush()

    # -- the four wires ------------------------------------------------------------------------

    def _chat(
        self, body: dict[str, Any], pieces: list[str], delay: float, call: Any, stream: bool
    ) -> None:
        model = body.get("model", "stub-model")
        usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
        if not stream:
            message: dict[str, Any] = {"role": "assistant", "content": "".join(pieces)}
            finish = "stop"
            if call:
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": call[0], "arguments": json.dumps(call[1])},
                        }
                    ],
                }
                finish = "tool_calls"
            self._send_json(
                200,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )
            return
        self._open_sse()

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> None:
            self._event(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                    **extra,
                }
            )

        if call:
            chunk(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": call[0], "arguments": json.dumps(call[1])},
                        }
                    ],
                }
            )
            chunk({}, "tool_calls", usage=usage)
        else:
            for index, piece in enumerate(pieces):
                if index and delay:
                    time.sleep(delay)
                chunk({"role": "assistant", "content": piece} if index == 0 else {"content": piece})
            chunk({}, "stop", usage=usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _responses(
        self, body: dict[str, Any], pieces: list[str], delay: float, call: Any, stream: bool
    ) -> None:
        self._open_sse()
        self._event({"type": "response.created", "response": {"id": "resp_1"}}, "response.created")
        if call:
            kind = _tool_kinds(body).get(call[0], "function")
            if kind == "custom":
                item: dict[str, Any] = {
                    "type": "custom_tool_call",
                    "id": "ctc_1",
                    "call_id": "call_1",
                    "name": call[0],
                    "input": call[1]["input"],
                    "status": "completed",
                }
            else:
                item = {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": call[0],
                    "arguments": json.dumps(call[1]),
                    "status": "completed",
                }
            self._event(
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                "response.output_item.done",
            )
        else:
            self._event(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
                },
                "response.output_item.added",
            )
            for index, piece in enumerate(pieces):
                if index and delay:
                    time.sleep(delay)
                self._event(
                    {
                        "type": "response.output_text.delta",
                        "item_id": "msg_1",
                        "output_index": 0,
                        "content_index": 0,
                        "delta": piece,
                    },
                    "response.output_text.delta",
                )
            item = {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "".join(pieces), "annotations": []}],
            }
            self._event(
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                "response.output_item.done",
            )
        self._event(
            {
                "type": "response.completed",
                "response": {
                    "id": "resp_1",
                    "usage": {
                        "input_tokens": 11,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": 7,
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": 18,
                    },
                },
            },
            "response.completed",
        )

    def _anthropic(
        self, body: dict[str, Any], pieces: list[str], delay: float, call: Any, stream: bool
    ) -> None:
        model = body.get("model", "claude-stub")
        if not stream:
            content: list[dict[str, Any]] = [{"type": "text", "text": "".join(pieces)}]
            stop = "end_turn"
            if call:
                content = [{"type": "tool_use", "id": "toolu_1", "name": call[0], "input": call[1]}]
                stop = "tool_use"
            self._send_json(
                200,
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 11, "output_tokens": 7},
                },
            )
            return
        self._open_sse()
        self._event(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 11, "output_tokens": 1},
                },
            },
            "message_start",
        )
        if call:
            self._event(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": call[0],
                        "input": {},
                    },
                },
                "content_block_start",
            )
            self._event(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(call[1])},
                },
                "content_block_delta",
            )
            stop = "tool_use"
        else:
            self._event(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            )
            for index, piece in enumerate(pieces):
                if index and delay:
                    time.sleep(delay)
                self._event(
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                    "content_block_delta",
                )
            stop = "end_turn"
        self._event({"type": "content_block_stop", "index": 0}, "content_block_stop")
        self._event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 7},
            },
            "message_delta",
        )
        self._event({"type": "message_stop"}, "message_stop")

    def _gemini(
        self, body: dict[str, Any], pieces: list[str], delay: float, call: Any, stream: bool
    ) -> None:
        usage = {"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18}

        def candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
            entry: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
            if finish:
                entry["finishReason"] = finish
            return {"candidates": [entry], "usageMetadata": usage, "modelVersion": "gemini-stub"}

        if call:
            frames = [candidate([{"functionCall": {"name": call[0], "args": call[1]}}], "STOP")]
        else:
            frames = [candidate([{"text": piece}], None) for piece in pieces[:-1]]
            frames.append(candidate([{"text": pieces[-1]}], "STOP"))
        if not stream:
            self._send_json(
                200, frames[-1] if call else candidate([{"text": "".join(pieces)}], "STOP")
            )
            return
        self._open_sse()
        for index, frame in enumerate(frames):
            if index and delay:
                time.sleep(delay)
            self._event(frame)


def _pieces(text: str, chunks: int) -> list[str]:
    if chunks <= 1 or len(text) < chunks:
        return [text]
    size = -(-len(text) // chunks)
    return [text[i : i + size] for i in range(0, len(text), size)]


def main() -> None:
    """Serves until stdin closes (the suite owns this process)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdout.write(f"{server.server_address[1]}\n")
    sys.stdout.flush()
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
