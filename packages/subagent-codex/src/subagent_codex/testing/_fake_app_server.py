"""A stdlib fake `codex app-server --listen stdio://`, following a scenario.

It speaks the handshake and one turn with frames shaped like the ones codex 0.163 writes
(captured from the real binary; a test validates every frame it writes against the JSON Schema
that `codex app-server generate-json-schema` produces), and misbehaves on request: floods,
garbage, duplicate and late responses, death mid-frame, deafness to EOF and SIGTERM, escaping
grandchildren, approval storms.

The scenario is a JSON object in `CODEX_FAKE_SCENARIO`:

- `account`: the `account/read` answer (default: no login needed);
- `initialize_error`: answer `initialize` with a JSON-RPC error of this code;
- `hang_at`: a request method never answered (the fake reads on until EOF);
- `exit_at`: `"initialize"` or `"thread"`: exit (code `exit_code`, default 3) at that request;
- `turn`: the actions played after `turn/start` is answered, in order, each an object with
  one key: `delta` (text), `message` (text; with `phase`), `reasoning` (text), `command`
  (a commandExecution item, started and completed), `usage` ([input, cached, output]),
  `approval` (`"command"`, `"fileChange"`, `"permissions"`; with `count`, default 1: a storm
  sends them all before reading an answer), `request` (any method: a server request the client
  does not know), `error` (a `codexErrorInfo`; with `willRetry`), `complete` (`"completed"`,
  `"failed"`, `"interrupted"`; with `info`), `flood` (that many notifications of an unknown
  method), `garbage` (a line that is not JSON), `huge` (a line of that many bytes),
  `duplicate` (answer the last request again), `late` (answer an id never asked), `die`
  (write half a frame, then exit with `exit_code`), `exit` (exit with that code), `hang`
  (read and ignore stdin for ever), `escapee` (start a `setsid` grandchild that sleeps),
  `env_to` (write the environment as JSON to that path);
- `ignore_eof`: keep running after stdin ends, and ignore SIGTERM;
- `answers_to`: append every answer the client gave to a server request to that file (JSONL).

`turn/interrupt` ends the turn as `interrupted` whatever is playing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any, Final, cast

SCENARIO_ENV: Final = "CODEX_FAKE_SCENARIO"
THREAD_ID: Final = "01a23700-0000-7000-8000-000000000001"
TURN_ID: Final = "01a23700-0000-7000-8000-000000000002"
_VERSION: Final = "0.163.0"


def _now_ms() -> int:
    return int(time.time() * 1000)


class FakeAppServer:
    """One fake server on this process's stdio."""

    def __init__(self, scenario: Mapping[str, Any]) -> None:
        self.scenario = scenario
        self.out = sys.stdout.buffer
        self.last_request_id: object = None
        self.interrupted = False
        self.pending_answers = 0

    # -- frames --------------------------------------------------------------------------

    def write(self, frame: Mapping[str, Any]) -> None:
        self.out.write(json.dumps(frame).encode() + b"\n")
        self.out.flush()

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        self.write({"method": method, "params": dict(params), "emittedAtMs": _now_ms()})

    def reply(self, ident: object, result: Mapping[str, Any]) -> None:
        self.write({"id": ident, "result": dict(result)})

    def read(self) -> dict[str, Any] | None:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        try:
            value: Any = json.loads(line)
        except ValueError:
            return {}
        return cast("dict[str, Any]", value) if isinstance(value, dict) else {}

    # -- shapes (as codex 0.163 writes them) ------------------------------------------------

    def thread(self, cwd: str) -> dict[str, Any]:
        now = int(time.time())
        return {
            "id": THREAD_ID,
            "sessionId": THREAD_ID,
            "forkedFromId": None,
            "parentThreadId": None,
            "preview": "",
            "ephemeral": True,
            "projectId": None,
            "modelProvider": "mock",
            "model": "gpt-5",
            "createdAt": now,
            "updatedAt": now,
            "status": {"type": "idle"},
            "path": None,
            "cwd": cwd,
            "cliVersion": _VERSION,
            "source": "vscode",
            "gitInfo": None,
            "name": None,
            "turns": [],
        }

    def turn(self, status: str, error: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return {
            "id": TURN_ID,
            "items": [],
            "status": status,
            "error": None if error is None else dict(error),
            "startedAt": None,
            "completedAt": None,
            "durationMs": None,
        }

    def item(self, method: str, item: Mapping[str, Any]) -> None:
        stamp = "completedAtMs" if method == "item/completed" else "startedAtMs"
        self.notify(
            method,
            {"item": dict(item), "threadId": THREAD_ID, "turnId": TURN_ID, stamp: _now_ms()},
        )

    def agent_message(self, text: str, phase: str | None) -> dict[str, Any]:
        return {"type": "agentMessage", "id": f"msg_{_now_ms()}", "text": text, "phase": phase}

    def command(self, command: str, status: str) -> dict[str, Any]:
        return {
            "type": "commandExecution",
            "id": "call_1",
            "command": command,
            "cwd": os.getcwd(),
            "processId": None,
            "source": "agent",
            "status": status,
            "commandActions": [{"type": "unknown", "command": command}],
            "aggregatedOutput": None,
            "exitCode": 0 if status == "completed" else None,
            "durationMs": None,
        }

    def approval_params(self, kind: str) -> tuple[str, dict[str, Any]]:
        base = {
            "threadId": THREAD_ID,
            "turnId": TURN_ID,
            "itemId": "call_1",
            "startedAtMs": _now_ms(),
        }
        if kind == "fileChange":
            return "item/fileChange/requestApproval", {**base, "reason": "writes a file"}
        if kind == "permissions":
            permissions = {"network": {"enabled": True}}
            return "item/permissions/requestApproval", {
                **base,
                "cwd": os.getcwd(),
                "permissions": permissions,
                "reason": "needs the network",
            }
        return "item/commandExecution/requestApproval", {
            **base,
            "command": "touch proof.txt",
            "cwd": os.getcwd(),
            "reason": "needs to write outside the sandbox",
            "availableDecisions": ["accept", "cancel"],
        }

    # -- the conversation ------------------------------------------------------------------

    def serve(self) -> int:
        scenario = self.scenario
        while True:
            frame = self.read()
            if frame is None:
                return self.at_eof()
            method = frame.get("method")
            ident = frame.get("id")
            if ident is None or not isinstance(method, str):
                continue  # notifications (`initialized`) and answers to our requests
            self.last_request_id = ident
            if scenario.get("hang_at") == method:
                while self.read() is not None:
                    pass
                return self.at_eof()
            if method == "initialize":
                code = scenario.get("initialize_error")
                if isinstance(code, int):
                    self.write({"id": ident, "error": {"code": code, "message": "refused"}})
                    continue
                if scenario.get("exit_at") == "initialize":
                    return int(scenario.get("exit_code", 3))
                self.reply(
                    ident,
                    {
                        "userAgent": f"fake/{_VERSION}",
                        "codexHome": os.environ.get("CODEX_HOME", "/nonexistent"),
                        "platformFamily": "unix",
                        "platformOs": "linux",
                    },
                )
            elif method == "account/read":
                account = scenario.get("account") or {"account": None, "requiresOpenaiAuth": False}
                self.reply(ident, account)
            elif method == "thread/start":
                if scenario.get("exit_at") == "thread":
                    return int(scenario.get("exit_code", 3))
                params: dict[str, Any] = frame.get("params") or {}
                cwd = str(params.get("cwd") or os.getcwd())
                self.reply(
                    ident,
                    {
                        "thread": self.thread(cwd),
                        "model": "gpt-5",
                        "modelProvider": "mock",
                        "cwd": cwd,
                        "approvalPolicy": params.get("approvalPolicy", "never"),
                        "approvalsReviewer": "user",
                        "sandbox": {"type": "readOnly", "networkAccess": False},
                        "reasoningEffort": None,
                        "serviceTier": None,
                    },
                )
                self.notify("thread/started", {"thread": self.thread(cwd)})
            elif method == "turn/start":
                self.reply(ident, {"turn": self.turn("inProgress")})
                self.notify(
                    "turn/started", {"threadId": THREAD_ID, "turn": self.turn("inProgress")}
                )
                code = self.play(scenario.get("turn") or [])
                if code is not None:
                    return code
            elif method == "turn/interrupt":
                self.reply(ident, {})
                self.end_turn("interrupted")
            else:
                self.write({"id": ident, "error": {"code": -32600, "message": "unknown method"}})

    def end_turn(self, status: str, info: object = None) -> None:
        error = None if info is None else {"message": "failed", "codexErrorInfo": info}
        self.notify("turn/completed", {"threadId": THREAD_ID, "turn": self.turn(status, error)})

    def await_answers(self, count: int) -> int | None:
        """Reads until `count` answers to our requests arrived (an interrupt ends the turn)."""
        while count > 0:
            frame = self.read()
            if frame is None:
                return self.at_eof()
            if frame.get("method") == "turn/interrupt":
                self.reply(frame.get("id"), {})
                self.end_turn("interrupted")
                self.interrupted = True
                return None
            if "method" not in frame:
                count -= 1
                path = self.scenario.get("answers_to")
                if isinstance(path, str):
                    with open(path, "a", encoding="utf-8") as handle:
                        handle.write(json.dumps(frame) + "\n")
        return None

    def play(self, actions: list[Mapping[str, Any]]) -> int | None:
        for action in actions:
            if self.interrupted:
                return None
            kind = next(iter(action), None)  # the first key names the action
            if kind == "delta":
                params = {"threadId": THREAD_ID, "turnId": TURN_ID, "itemId": "msg_1"}
                self.notify("item/agentMessage/delta", {**params, "delta": action["delta"]})
            elif kind == "message":
                message = self.agent_message(str(action["message"]), action.get("phase"))
                self.item("item/started", {**message, "text": ""})
                self.item("item/completed", message)
            elif kind == "reasoning":
                params = {"threadId": THREAD_ID, "turnId": TURN_ID, "itemId": "rs_1"}
                self.notify(
                    "item/reasoning/summaryTextDelta",
                    {**params, "delta": action["reasoning"], "summaryIndex": 0},
                )
            elif kind == "command":
                self.item("item/started", self.command(str(action["command"]), "inProgress"))
                self.item("item/completed", self.command(str(action["command"]), "completed"))
            elif kind == "usage":
                given, cached, output = action["usage"]
                total = {
                    "totalTokens": given + output,
                    "inputTokens": given,
                    "cachedInputTokens": cached,
                    "outputTokens": output,
                    "reasoningOutputTokens": 0,
                }
                self.notify(
                    "thread/tokenUsage/updated",
                    {
                        "threadId": THREAD_ID,
                        "turnId": TURN_ID,
                        "tokenUsage": {"total": total, "last": total, "modelContextWindow": None},
                    },
                )
            elif kind == "approval":
                count = int(action.get("count", 1))
                method, params = self.approval_params(str(action["approval"]))
                for n in range(count):
                    self.write({"id": 1000 + n, "method": method, "params": params})
                code = self.await_answers(count)
                if code is not None:
                    return code
            elif kind == "request":
                self.write({"id": 999, "method": action["request"], "params": {}})
                code = self.await_answers(1)
                if code is not None:
                    return code
            elif kind == "error":
                self.notify(
                    "error",
                    {
                        "error": {
                            "message": str(action.get("message", "upstream said no")),
                            "codexErrorInfo": action["error"],
                            "additionalDetails": action.get("details"),
                        },
                        "willRetry": bool(action.get("willRetry", False)),
                        "threadId": THREAD_ID,
                        "turnId": TURN_ID,
                    },
                )
            elif kind == "complete":
                self.end_turn(str(action["complete"]), action.get("info"))
            elif kind == "flood":
                for n in range(int(action["flood"])):
                    self.notify("fake/flood", {"n": n, "pad": "x" * 64})
            elif kind == "garbage":
                self.out.write(str(action["garbage"]).encode() + b"\n")
                self.out.flush()
            elif kind == "huge":
                self.out.write(b'{"pad": "' + b"x" * int(action["huge"]) + b'"}\n')
                self.out.flush()
            elif kind == "duplicate":
                self.reply(self.last_request_id, {"turn": self.turn("inProgress")})
            elif kind == "late":
                self.reply(action["late"], {})
            elif kind == "die":
                self.out.write(b'{"method": "item/agentMessage/delta", "par')
                self.out.flush()
                os._exit(int(action["die"]))
            elif kind == "exit":
                self.out.flush()
                os._exit(int(action["exit"]))
            elif kind == "hang":
                while self.read() is not None:
                    pass
                return self.at_eof()
            elif kind == "escapee":
                subprocess.Popen(
                    [sys.executable, "-c", "import time; time.sleep(300)"],
                    start_new_session=True,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            elif kind == "env_to":
                with open(str(action["env_to"]), "w", encoding="utf-8") as handle:
                    json.dump(dict(os.environ), handle)
        return None

    def at_eof(self) -> int:
        if self.scenario.get("ignore_eof"):
            while True:
                time.sleep(3600)
        return 0


def run_fake_app_server() -> int:
    """Serves the scenario from `CODEX_FAKE_SCENARIO`; returns the exit code."""
    scenario = json.loads(os.environ.get(SCENARIO_ENV) or "{}")
    if scenario.get("ignore_eof"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return FakeAppServer(scenario).serve()
