"""The scripted fake ACP agent: a real child process speaking ACP on stdio.

It uses only the standard library so it starts in a few milliseconds (importing `acp` costs
about a second); the package tests drive it with the SDK's own client to prove its frames are
valid ACP. It is single-threaded: one loop reads stdin line by line, and a prompt's work is a
generator that pauses whenever it waits for the client's answer to a request it sent. The
scenario it plays is `_script`; the sessions it keeps for a later process, `_stored_sessions`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import IO, Any, cast

from ._script import (
    Flow,
    Message,
    ScriptError,
    as_dict,
    as_list,
    load_script,
    permission_params,
    probe_params,
    prompt_text,
    split_text,
    turn_script,
)
from ._stored_sessions import SessionBook, agent_capabilities


class FakeChild:
    """One scripted agent process."""

    def __init__(self, script: Mapping[str, Any], stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self._base = script
        self._script = script
        """The scenario of the turn being played (`turns` laid over the base)."""
        self._in = stdin
        self._out = stdout
        self._next_id = 1000
        self._session_cwd: str | None = None
        self._sessions = 0
        self._turns = 0
        self._book = SessionBook(script.get("state_dir"))
        self._session_id = self._book.session_id
        self._prompt_id: object = None
        self._flow: Flow | None = None
        self._waiting_for: int | None = None
        self._answers: dict[object, Message] = {}
        self._grandchildren: list[subprocess.Popen[bytes]] = []

    # -- wire ------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        self._out.write(data)

    def _send(self, message: Message) -> None:
        message = {"jsonrpc": "2.0", **message}
        self._write(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")

    def _flush(self) -> None:
        self._out.flush()

    def _respond(self, request_id: object, result: object, duplicate: object = None) -> None:
        self._send({"id": request_id, "result": result})
        if duplicate is not None and self._script.get("duplicate_answers"):
            self._send({"id": request_id, "result": duplicate})

    def _respond_error(
        self, request_id: object, code: int, message: str, data: object = None
    ) -> None:
        error: Message = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._send({"id": request_id, "error": error})

    def _update(self, update: Message) -> None:
        params = {"sessionId": self._session_id, "update": update}
        self._send({"method": "session/update", "params": params})

    def _chunk(self, text: str) -> None:
        self._book.said(text)
        self._update(
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        )

    def _request(self, method: str, params: object) -> int:
        self._next_id += 1
        self._send({"id": self._next_id, "method": method, "params": params})
        return self._next_id

    # -- scripted hooks ----------------------------------------------------------------------

    def _markers(self, point: str) -> list[dict[str, Any]]:
        markers: object = self._script.get("markers", [])
        items: list[object] = [markers] if isinstance(markers, dict) else as_list(markers)
        return [as_dict(item) for item in items if as_dict(item).get("at", "start") == point]

    def _marker(self, point: str) -> None:
        for item in self._markers(point):
            if "path" in item:
                Path(str(item["path"])).write_text(str(item.get("text", point)), "utf-8")

    def _has_marker(self, point: str) -> bool:
        return bool(self._markers(point))

    def _inject(self, point: str) -> None:
        for raw in as_list(self._script.get("inject")):
            item = as_dict(raw)
            if item.get("at") != point:
                continue
            kind = item.get("kind", "malformed")
            if kind == "malformed":
                self._write(b'{"jsonrpc": "2.0", "method": "session/update", "params": {\n')
            elif kind == "non_utf8":
                self._write(
                    b'{"jsonrpc":"2.0","method":"\xff\xfe\x80"}\n\xc3\x28 garbage \xa0\xa1\n'
                )
            elif kind == "garbage":
                self._write(b"Traceback (most recent call last): not json at all\n[1,2,3]\n42\n")
            elif kind == "huge_garbage":
                self._write(b"x" * int(item.get("bytes", 1_000_000)) + b"\n")
            elif kind == "raw":
                self._write(str(item.get("line", "")).encode("utf-8") + b"\n")
            elif kind == "unknown_request":
                self._request(str(item.get("method", "vendor/unknown")), {"x": 1})
        self._flush()

    def _crash(self, point: str) -> None:
        crash = as_dict(self._script.get("crash"))
        if crash.get("at") != point:
            return
        self._flush()
        name = crash.get("signal")
        if isinstance(name, str):
            os.kill(os.getpid(), getattr(signal, name))
            threading.Event().wait(10)
        os._exit(int(crash.get("exit_code", 1)))

    def _close_stdout(self, point: str) -> None:
        """Closes stdout (the client sees EOF), then exits after a delay or waits for EOF."""
        close = as_dict(self._script.get("close_stdout"))
        if close.get("at") != point:
            return
        self._flush()
        os.close(self._out.fileno())
        if "exit_code" in close:
            threading.Event().wait(float(close.get("delay_seconds", 0.0)))
            os._exit(int(close["exit_code"]))
        while self._in.readline():
            pass
        os._exit(0)

    def _scripted_error(self, point: str, request_id: object) -> bool:
        error = as_dict(self._script.get("error"))
        if error.get("at") != point:
            return False
        self._respond_error(
            request_id,
            int(error.get("code", -32000)),
            str(error.get("message", "Authentication required")),
            error.get("data"),
        )
        return True

    def _enter(self, point: str, request_id: object) -> bool:
        """Runs the hooks of a stage; False when the request must not be answered now."""
        self._marker(point)
        self._inject(point)
        self._crash(point)
        self._close_stdout(point)
        if self._scripted_error(point, request_id):
            return False
        return self._script.get("hang_at") != point or point == "prompt"

    def _result_for(self, point: str, default: object) -> object:
        results = as_dict(self._script.get("results"))
        return results.get(point, default)

    # -- methods -----------------------------------------------------------------------------

    def _on_initialize(self, request_id: object) -> None:
        if self._enter("initialize", request_id):
            capabilities = agent_capabilities(self._script.get("sessions"))
            default: Message = {"protocolVersion": 1, "agentCapabilities": capabilities}
            default["authMethods"] = []
            self._respond(request_id, self._result_for("initialize", default), {"bogus": True})

    def _on_new_session(self, request_id: object, params: Message) -> None:
        cwd = params.get("cwd")
        self._session_cwd = cwd if isinstance(cwd, str) else None
        self._sessions += 1
        if not self._enter("new_session", request_id):
            return
        result: Message = {}
        if not self._script.get("omit_session_id"):
            result["sessionId"] = self._script.get("session_id", self._session_id)
        if isinstance(result.get("sessionId"), str):
            self._session_id = result["sessionId"]
            self._book.start(self._session_id, self._session_cwd)
        crash_after = as_dict(self._script.get("crash")).get("at") == "after_new_session"
        close_stdin = self._script.get("close_stdin_at") == "new_session"
        if crash_after or close_stdin:
            # Close our end first, so the client's next write (session/prompt) surely fails.
            fd = self._in.fileno()
            self._in.close()
            with contextlib.suppress(OSError):
                os.close(fd)
        self._respond(
            request_id, self._result_for("new_session", result), {"sessionId": "duplicate-session"}
        )
        if crash_after:
            self._crash("after_new_session")
        if close_stdin:
            self._flush()
            while True:
                threading.Event().wait(3600)

    def _on_reopen(self, point: str, request_id: object, params: Message) -> None:
        """`session/load` (the conversation replayed as updates first) or `session/resume`."""
        if not self._enter(point, request_id):
            return
        session_id = params.get("sessionId")
        if not self._book.open(session_id, params.get("cwd")):
            self._respond_error(request_id, -32602, f"unknown session {session_id}")
            return
        self._session_id, self._session_cwd = self._book.session_id, self._book.cwd
        if point == "load_session":
            for update in self._book.replay():
                self._update(update)
        self._respond(request_id, {})

    def _on_prompt(self, request_id: object, params: Message) -> None:
        self._turns += 1
        self._note_traceparent(params)
        self._book.prompt(prompt_text(params))
        self._script = turn_script(self._base, self._turns, self._book.prompts)
        self._prompt_id = request_id
        if not self._enter("prompt", request_id):
            self._prompt_id = None
            return
        self._flow = self._prompt_flow()
        self._advance(None)

    def _note_traceparent(self, params: Message) -> None:
        """`traceparent_file`: appends the prompt's `_meta.traceparent` (`-` without one)."""
        path = self._base.get("traceparent_file")
        if isinstance(path, str):
            value = as_dict(params.get("_meta")).get("traceparent")
            with Path(path).open("a", encoding="utf-8") as file:
                file.write(f"{value if isinstance(value, str) else '-'}\n")

    def _on_cancel(self) -> None:
        self._marker("cancel")
        self._crash("cancel")
        if self._script.get("ignore_cancel") or self._prompt_id is None:
            return
        if self._flow is not None:
            self._flow.close()
            self._flow = None
        self._respond(self._prompt_id, {"stopReason": "cancelled"})
        self._prompt_id = None

    def _advance(self, answer: Message | None) -> None:
        flow = self._flow
        if flow is None:
            return
        try:
            self._waiting_for = flow.send(answer) if answer is not None else next(flow)
        except StopIteration:
            self._flow = None
            self._waiting_for = None

    def _prompt_flow(self) -> Flow:
        script = self._script
        for update in as_list(script.get("updates")):
            self._update(as_dict(update))
        if script.get("echo_cwd"):
            self._chunk(os.getcwd())
        if script.get("echo_pid"):
            self._chunk(f"pid={os.getpid()} sessions={self._sessions} cwd={os.getcwd()}")
        if script.get("echo_session_cwd"):
            self._chunk(str(self._session_cwd))
        for name in as_list(script.get("echo_env")):
            value = os.environ.get(name)
            self._chunk(f"{name}={value}\n" if value is not None else f"{name} unset\n")
        if script.get("thought"):
            self._update(
                {
                    "sessionUpdate": "agent_thought_chunk",
                    "content": {"type": "text", "text": str(script["thought"])},
                }
            )
        if script.get("tool_call"):
            self._update(
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "call-noise",
                    "title": "noise tool call",
                    "kind": "read",
                    "status": "pending",
                }
            )
            self._update(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "call-noise",
                    "status": "completed",
                }
            )
        if script.get("plan"):
            entry = {"content": "a plan step", "priority": "high", "status": "pending"}
            self._update({"sessionUpdate": "plan", "entries": [entry]})
        if script.get("image_chunk"):
            self._update(
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                }
            )
        for method in as_list(script.get("probe_requests")):
            request_id = self._request(method, probe_params(self._session_id, method))
            self._flush()
            answer = yield request_id
            code = as_dict(answer.get("error")).get("code", "ok")
            self._chunk(f"[{method} -> {code}]")
        yield from self._fs_flow()
        yield from self._terminal_flow()
        yield from self._concurrent_permissions()
        stop_reason: object = script.get("stop_reason", "end_turn")
        requests: object = script.get("permission")
        listed: list[object] = [requests] if isinstance(requests, dict) else as_list(requests)
        for raw in listed:
            permission = as_dict(raw)
            params = permission_params(self._session_id, permission)
            request_id = self._request("session/request_permission", params)
            self._flush()
            answer = yield request_id
            outcome = as_dict(as_dict(answer.get("result")).get("outcome"))
            if outcome.get("outcome") == "selected":
                if permission.get("echo_outcome", True):
                    self._chunk(f"[permission selected {outcome.get('optionId')}]")
                stop_reason = permission.get("stop_reason_if_selected", stop_reason)
            else:
                if permission.get("echo_outcome", True):
                    self._chunk("[permission cancelled]")
                stop_reason = permission.get("stop_reason_if_cancelled", stop_reason)
        gate = script.get("gate_file")
        if isinstance(gate, str):
            self._flush()
            while not Path(gate).exists():  # the test opens the gate by creating the file
                threading.Event().wait(0.01)
        for _ in range(int(script.get("flood", 0))):
            self._update(
                {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "x"}}
            )
        for piece in split_text(str(script.get("text", "")), int(script.get("chunks", 1))):
            self._chunk(piece)
        stream = as_dict(script.get("stream_bytes"))
        if stream:
            total = int(stream.get("total", 0))
            piece = "x" * max(1, int(stream.get("chunk", 65536)))
            while total > 0:
                self._chunk(piece[:total])
                total -= len(piece)
        flood = as_dict(script.get("flood_requests"))
        if flood:
            self._flood(flood)
        huge = script.get("huge_chunk_bytes")
        if isinstance(huge, int) and huge > 0:
            self._chunk("x" * huge)
        if self._has_marker("prompt_output"):
            # A round trip first: the client answers only after it handled every update above,
            # so whoever sees this marker knows the parent already holds that output.
            yield self._request("fake/sync", {"sessionId": self._session_id})
            self._marker("prompt_output")
        self._crash("after_prompt_output")
        self._keepalive(as_dict(script.get("keepalive")))
        if script.get("hang_at") == "prompt":
            self._flush()
            return  # the answer comes with session/cancel (or never)
        if not self._scripted_error("prompt_end", self._prompt_id):
            answer_default: Message = {"stopReason": stop_reason}
            if isinstance(script.get("usage"), dict):
                answer_default["usage"] = script["usage"]
            answer = self._result_for("prompt", answer_default)
            self._respond(self._prompt_id, answer, {"stopReason": "refusal"})
        self._prompt_id = None
        after = script.get("text_after_end")
        if isinstance(after, str):
            for piece in split_text(after, int(script.get("chunks", 1))):
                self._chunk(piece)

    def _keepalive(self, spec: Message) -> None:
        """`keepalive`: `{"interval_seconds", "count"}`: `count` times, wait, then send an
        `available_commands_update` (a frame the parent consumes without output)."""
        interval = float(spec.get("interval_seconds", 0.1))
        for _ in range(int(spec.get("count", 0))):
            self._flush()
            threading.Event().wait(interval)
            self._update({"sessionUpdate": "available_commands_update", "availableCommands": []})

    def _call(self, method: str, params: Message) -> Generator[int, Message, Message]:
        """Sends one request to the client and returns its answer."""
        request_id = self._request(method, {"sessionId": self._session_id, **params})
        self._flush()
        answer = yield request_id
        return answer

    def _fs_flow(self) -> Flow:
        """`fs_ops`: `[{"op": "read"|"write", "path", "content", "line", "limit"}]`; emits
        `[read -> ok <content>]`, `[write -> ok]` or `[<op> -> <code> <message>]` per op."""
        for raw in as_list(self._script.get("fs_ops")):
            op = as_dict(raw)
            kind = str(op.get("op", "read"))
            params: Message = {"path": op.get("path")}
            for key in ("line", "limit", "content"):
                if key in op:
                    params[key] = op[key]
            method = "fs/write_text_file" if kind == "write" else "fs/read_text_file"
            answer = yield from self._call(method, params)
            error = as_dict(answer.get("error"))
            if error:
                self._chunk(f"[{kind} -> {error.get('code')} {error.get('message')}]")
            elif kind == "read":
                self._chunk(f"[read -> ok {as_dict(answer.get('result')).get('content')}]")
            else:
                self._chunk("[write -> ok]")

    def _terminal_flow(self) -> Flow:
        """`terminal`: `{"command", "args", "cwd", "env", "output_byte_limit", "wait", "kill",
        "release"}`: create a terminal, then optionally wait for it / kill it / release it;
        emits what each step answered."""
        spec = as_dict(self._script.get("terminal"))
        if not spec:
            return
        params: Message = {"command": spec.get("command", "true"), "args": spec.get("args", [])}
        if "cwd" in spec:
            params["cwd"] = spec["cwd"]
        if "env" in spec:
            params["env"] = [{"name": k, "value": v} for k, v in as_dict(spec["env"]).items()]
        if "output_byte_limit" in spec:
            params["outputByteLimit"] = spec["output_byte_limit"]
        answer = yield from self._call("terminal/create", params)
        error = as_dict(answer.get("error"))
        if error:
            self._chunk(f"[terminal -> {error.get('code')} {error.get('message')}]")
            return
        terminal = {"terminalId": as_dict(answer.get("result")).get("terminalId")}
        self._chunk("[terminal -> created]")
        if spec.get("kill"):
            yield from self._call("terminal/kill", terminal)
        if spec.get("wait") or spec.get("kill"):
            answer = yield from self._call("terminal/wait_for_exit", terminal)
            result = as_dict(answer.get("result"))
            self._chunk(f"[exit -> {result.get('exitCode')} {result.get('signal')}]")
            answer = yield from self._call("terminal/output", terminal)
            result = as_dict(answer.get("result"))
            self._chunk(f"[output -> {result.get('truncated')} {result.get('output')}]")
        if spec.get("release"):
            yield from self._call("terminal/release", terminal)

    def _concurrent_permissions(self) -> Flow:
        """`concurrent_permissions`: `{"count", "tool_kind"}`: send `count` permission requests
        at once, then emit `[<i> -> selected|cancelled|<error code>]` for each answer."""
        spec = as_dict(self._script.get("concurrent_permissions"))
        ids: list[int] = []
        for _ in range(int(spec.get("count", 0))):
            kind = {"tool_kind": spec.get("tool_kind", "read")}
            params = permission_params(self._session_id, kind)
            ids.append(self._request("session/request_permission", params))
        self._flush()
        for index, request_id in enumerate(ids):
            answer = yield request_id
            error = as_dict(answer.get("error"))
            outcome = as_dict(as_dict(answer.get("result")).get("outcome")).get("outcome")
            self._chunk(f"[{index} -> {error.get('code') if error else outcome}]")

    def _flood(self, flood: Mapping[str, Any]) -> None:
        """Sends `count` requests without reading stdin, then never reads it again."""
        method = str(flood.get("method", "fs/read_text_file"))
        params = probe_params(self._session_id, method)
        if "path" in flood:
            params["path"] = flood["path"]
        for _ in range(int(flood.get("count", 100_000))):
            self._request(method, params)
        self._flush()
        while True:
            threading.Event().wait(3600)

    # -- process life ------------------------------------------------------------------------

    def _start(self) -> None:
        if self._script.get("trap_sigterm"):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stderr = as_dict(self._script.get("stderr"))
        if stderr:
            text = str(stderr.get("text", "secret")).encode("utf-8", "surrogateescape")
            total = int(stderr.get("bytes", len(text)))
            data = (text * (total // max(1, len(text)) + 1))[:total]
            sys.stderr.buffer.write(data)
            sys.stderr.buffer.flush()
        code = [sys.executable, "-c", "import threading; threading.Event().wait(600)"]
        if self._script.get("grandchild"):
            setsid = bool(self._script.get("grandchild_setsid"))
            self._grandchildren.append(
                subprocess.Popen(code, stdin=subprocess.DEVNULL, start_new_session=setsid)
            )
        if self._script.get("grandchild_holds_stdout"):
            self._grandchildren.append(subprocess.Popen(code, stdin=subprocess.DEVNULL))
        if self._script.get("setsid_escapee"):
            escapee = subprocess.Popen(
                code, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
            )
            self._grandchildren.append(escapee)
        self._marker("start")
        self._inject("start")

    def _on_eof(self) -> int:
        self._marker("eof")
        eof_marker = as_dict(self._script.get("eof_marker"))
        if self._script.get("ignore_eof"):
            while True:
                threading.Event().wait(3600)
        if "path" in eof_marker:
            threading.Event().wait(float(eof_marker.get("delay_seconds", 0.2)))
            Path(str(eof_marker["path"])).write_text("flushed", "utf-8")
        return 0

    def _record(self, line: bytes) -> None:
        record = self._script.get("record_file")
        if isinstance(record, str):
            with Path(record).open("ab") as file:
                file.write(line.rstrip(b"\n") + b"\n")

    def _dispatch(self, message: Message) -> None:
        method = message.get("method")
        request_id = message.get("id")
        params = as_dict(message.get("params"))
        if method is None:
            if request_id is not None and self._flow is not None:
                # Answers may come in any order: keep them until the flow asks for them.
                self._answers[request_id] = message
                while self._waiting_for is not None and self._waiting_for in self._answers:
                    self._advance(self._answers.pop(self._waiting_for))
            return
        if method == "initialize":
            self._on_initialize(request_id)
        elif method == "session/new":
            self._on_new_session(request_id, params)
        elif method == "session/prompt":
            self._on_prompt(request_id, params)
        elif method in ("session/load", "session/resume"):
            self._on_reopen(method.removeprefix("session/") + "_session", request_id, params)
        elif method == "session/cancel":
            self._on_cancel()
        elif method == "session/set_mode":
            self._respond(request_id, {})
        elif method == "session/set_config_option":
            self._respond(request_id, {"configOptions": []})
        elif request_id is not None:
            self._respond_error(request_id, -32601, "Method not found", {"method": method})

    def run(self) -> int:
        """Serves until stdin ends; returns the exit code."""
        self._start()
        self._flush()
        while True:
            line = self._in.readline()
            if not line:
                return self._on_eof()
            try:
                message: object = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                self._record(line)
                self._dispatch(as_dict(cast(object, message)))
            self._flush()


def run_fake_child(argv: list[str] | None = None) -> int:
    """Entry point: loads the scenario and serves ACP on this process's stdio."""
    try:
        script = load_script(sys.argv[1:] if argv is None else argv, os.environ)
    except (ScriptError, ValueError, OSError) as error:
        sys.stderr.write(f"fake ACP child: bad scenario: {error}\n")
        return 2
    try:
        return FakeChild(script, sys.stdin.buffer, sys.stdout.buffer).run()
    except BrokenPipeError:
        return 0
