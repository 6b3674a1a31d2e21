"""A stdlib fake `codex app-server --listen stdio://`: the server loop that plays a scenario.

It speaks the handshake and its turns with frames shaped like the ones codex 0.163 writes
(captured from the real binary; a test validates every frame it writes against the JSON Schema
that `codex app-server generate-json-schema` produces), and misbehaves on request: floods,
garbage, duplicate and late responses, death mid-frame, deafness to EOF and SIGTERM, escaping
grandchildren, approval storms. What it plays is the scenario `_script` loads and describes.

`turn/interrupt` ends the turn as `interrupted` whatever is playing. Each turn has its own id.
A thread started with `ephemeral: false` keeps its prompts in a rollout file under
`CODEX_HOME/sessions/`; `thread/resume` continues it, or answers `-32600` "no rollout found"
as codex does when that file is missing.
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

from ._script import Action, ScenarioError, echoed_totals, load_scenario, shared_turn

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
        self.turn_id = TURN_ID
        self.turns_started = 0
        self.prompts: list[str] = []
        self.rollout: str | None = None
        self.totals = [0, 0, 0]
        """The thread's token totals (input, cached, output) over the `echo_prompt` turns."""

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
            "id": self.turn_id,
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
            {"item": dict(item), "threadId": THREAD_ID, "turnId": self.turn_id, stamp: _now_ms()},
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
            "turnId": self.turn_id,
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
                    return int(scenario["exit_code"])
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
            elif method in ("thread/start", "thread/resume"):
                if scenario.get("exit_at") == "thread":
                    return int(scenario["exit_code"])
                params: dict[str, Any] = frame.get("params") or {}
                if not self.open_rollout(method, params):
                    message = f"no rollout found for thread id {params.get('threadId')}"
                    self.write({"id": ident, "error": {"code": -32600, "message": message}})
                    continue
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
                if method == "thread/start":
                    self.notify("thread/started", {"thread": self.thread(cwd)})
            elif method == "turn/start":
                self.begin_turn(frame.get("params") or {})
                self.reply(ident, {"turn": self.turn("inProgress")})
                self.notify(
                    "turn/started", {"threadId": THREAD_ID, "turn": self.turn("inProgress")}
                )
                self.grandchildren()
                turn = self.actions()
                code = self.play(turn)
                if code is None and self.hangs() and "turn" not in scenario:
                    code = self.hang_turn()
                if code is not None:
                    return code
            elif method == "turn/interrupt":
                self.reply(ident, {})
                self.end_turn("interrupted")
            else:
                self.write({"id": ident, "error": {"code": -32600, "message": "unknown method"}})

    def open_rollout(self, method: str, params: Mapping[str, Any]) -> bool:
        """Keeps a non-ephemeral thread's prompts in `CODEX_HOME/sessions/` (as codex keeps
        its rollout); False for a resume whose rollout is missing."""
        folder = os.path.join(os.environ.get("CODEX_HOME", "/nonexistent"), "sessions")
        path = os.path.join(folder, f"rollout-{THREAD_ID}.jsonl")
        if method == "thread/resume":
            if params.get("threadId") != THREAD_ID or not os.path.isfile(path):
                return False
            with open(path, encoding="utf-8") as handle:
                self.prompts = [json.loads(line) for line in handle if line.strip()]
            self.rollout = path
        elif params.get("ephemeral") is False:
            os.makedirs(folder, exist_ok=True)
            open(path, "w", encoding="utf-8").close()
            self.rollout = path
        return True

    def begin_turn(self, params: Mapping[str, Any]) -> None:
        """A new turn id, and the prompt kept (in the rollout too, for a kept thread)."""
        self.turns_started += 1
        self.interrupted = False
        self.turn_id = TURN_ID[:-12] + f"{self.turns_started + 1:012d}"
        parts: list[Any] = list(params.get("input") or [])
        texts = [
            cast("dict[str, Any]", part).get("text", "") for part in parts if isinstance(part, dict)
        ]
        prompt = " ".join(str(text) for text in texts)
        self.prompts.append(prompt)
        if self.rollout is not None:
            with open(self.rollout, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(prompt) + "\n")

    def actions(self) -> list[Action]:
        """This turn's actions: `turns[n]` (the last repeats), `turn`, or the shared knobs'."""
        scenario = self.scenario
        if scenario.get("echo_history"):
            seen = "seen: " + " | ".join(self.prompts)
            return [{"message": seen, "phase": "final_answer"}, {"complete": "completed"}]
        turns: Any = scenario.get("turns")
        if isinstance(turns, list) and turns:
            plays = cast("list[list[Action]]", turns)
            return list(plays[min(self.turns_started, len(plays)) - 1])
        return scenario["turn"] if "turn" in scenario else self.shared_turn()

    def hangs(self) -> bool:
        """The shared `hang_at` `"turn"`: the first turn goes silent, later turns answer."""
        return self.scenario.get("hang_at") == "turn" and self.turns_started == 1

    def shared_turn(self) -> list[Action]:
        """This turn as the shared knobs describe it; an echoed turn grows the thread's totals."""
        prompt = self.prompts[-1]
        if self.scenario.get("echo_prompt"):
            self.totals = echoed_totals(self.totals, prompt)
        return shared_turn(self.scenario, prompt=prompt, totals=self.totals, silent=self.hangs())

    def grandchildren(self) -> None:
        """`grandchild_holds_stdout` and `setsid_escapee`: sleepers that never exit by themselves."""
        sleeper = [sys.executable, "-c", "import time; time.sleep(300)"]
        if self.scenario.get("grandchild_holds_stdout"):
            subprocess.Popen(sleeper, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.scenario.get("setsid_escapee"):
            subprocess.Popen(
                sleeper,
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )

    def hang_turn(self) -> int | None:
        """Silence until `turn/interrupt` ends the turn (`None`) or stdin ends (the exit code)."""
        while True:
            frame = self.read()
            if frame is None:
                return self.at_eof()
            if frame.get("method") == "turn/interrupt":
                self.reply(frame.get("id"), {})
                self.end_turn("interrupted")
                return None

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

    def play(self, actions: list[Action]) -> int | None:
        for action in actions:
            if self.interrupted:
                return None
            kind = next(iter(action), None)  # the first key names the action
            if kind == "delta":
                params = {"threadId": THREAD_ID, "turnId": self.turn_id, "itemId": "msg_1"}
                self.notify("item/agentMessage/delta", {**params, "delta": action["delta"]})
            elif kind == "message":
                message = self.agent_message(str(action["message"]), action.get("phase"))
                self.item("item/started", {**message, "text": ""})
                self.item("item/completed", message)
            elif kind == "reasoning":
                params = {"threadId": THREAD_ID, "turnId": self.turn_id, "itemId": "rs_1"}
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
                        "turnId": self.turn_id,
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
                        "turnId": self.turn_id,
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
            elif kind == "until_interrupt":
                code = self.hang_turn()
                if code is not None:
                    return code
            elif kind == "pid_to":
                with open(str(action["pid_to"]), "w", encoding="utf-8") as handle:
                    handle.write(str(os.getpid()))
            elif kind == "env_to":
                with open(str(action["env_to"]), "w", encoding="utf-8") as handle:
                    json.dump(dict(os.environ), handle)
        return None

    def at_eof(self) -> int:
        if self.scenario.get("ignore_eof"):
            while True:
                time.sleep(3600)
        return 0


def serve_scenario() -> int:
    """Serves the scenario from `CODEX_FAKE_SCENARIO` on stdio; returns the exit code (2 for a
    scenario the fake cannot read, with the reason on stderr)."""
    try:
        scenario = load_scenario(os.environ)
    except ScenarioError as error:
        sys.stderr.write(f"fake app-server: {error}\n")
        return 2
    if scenario.get("trap_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return FakeAppServer(scenario).serve()
