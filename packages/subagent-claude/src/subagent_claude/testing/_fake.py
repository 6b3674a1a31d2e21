"""The scripted fake `claude`: a real child process speaking the stream-json control protocol.

Its frames are the real CLI's: every frame it writes is a copy of one captured from Claude Code
2.1.x against the loopback Messages stub (`frames/*.jsonl`), with only the scripted fields
(text, usage, stop facts, tool calls) replaced. `replay` writes a whole captured conversation
verbatim instead, answering the parent's control requests in between, so a test proves the
provider reads the real CLI's stream. Standard library only, single-threaded, so it starts in
milliseconds; it ignores the CLI options the provider passes, except that it notes
`--json-schema` and `--include-partial-messages`.

Hostile knobs make it flood, write garbage or an over-long line, die mid-frame, ignore EOF, trap
SIGTERM, leave `setsid`/double-fork escapees, storm the parent with `can_use_tool` requests or
send control requests the parent does not serve. It reads the shared knobs of the conformance
suite (`subagent_core.testing.conformance`) too: `hang_at` `handshake` is `initialize` and
`turn` is `prompt` on the first turn, `exit_code` exits on the `initialize` request,
`trap_term` is `trap_sigterm`, `grandchild_holds_stdout` / `setsid_escapee` start
grandchildren before the text, `flood` streams that many thinking deltas first, `echo_prompt`
answers each turn with its user message. The scenario's knobs are `_script`'s.

Like the CLI it answers each user message with one turn and one `result` until stdin closes;
`turns` lays knobs over the rest per turn. `total_cost_usd` is the conversation's running total
(each turn adds its `cost`); a turn streams its token counts (`message_start`/`_delta`). With
`transcripts` it keeps the conversation where the CLI does (`CLAUDE_CONFIG_DIR/projects/<cwd>/
<id>.jsonl`, the total written at EOF) so `--resume <id>` continues it; an id it does not hold
gets the captured `resume-miss` frame (plus newer CLIs' `startup_failure_reason`) and exit 1.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, cast

from ._script import load_script

FRAMES_DIR = Path(__file__).parent / "frames"
"""The captured real-CLI conversations, one JSON frame a line."""

_FIXED_SESSION_ID = "00000000-0000-4000-8000-000000000001"
_TOKEN_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens")

Frame = dict[str, Any]


def captured(name: str) -> list[Frame]:
    """The frames of one captured conversation."""
    text = (FRAMES_DIR / f"{name}.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _template(kind: str, subtype: str | None = None, source: str = "text") -> Frame:
    for frame in captured(source):
        if frame.get("type") == kind and (subtype is None or frame.get("subtype") == subtype):
            return frame
    raise LookupError(kind)


class _Out:
    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def frame(self, frame: Frame) -> None:
        self.raw(json.dumps(frame, separators=(",", ":")).encode() + b"\n")

    def raw(self, data: bytes) -> None:
        self._stream.write(data)
        self._stream.flush()


class FakeClaude:
    """One scripted CLI session."""

    def __init__(self, script: Mapping[str, Any], argv: list[str]) -> None:
        self.base = script
        self.script = script
        self.partials = "--include-partial-messages" in argv
        self.schema = "--json-schema" in argv
        self.out = _Out(sys.stdout.buffer)
        self.resume = argv[argv.index("--resume") + 1] if "--resume" in argv[:-1] else None
        fresh = str(uuid.uuid4()) if script.get("transcripts") else _FIXED_SESSION_ID
        self.session_id = str(script.get("session_id") or self.resume or fresh)
        self.cost_total = 0.0
        self._prompts: deque[Frame] = deque()
        self.prompt: Frame = {}
        """The user message of the turn being played."""
        self.turn = 0
        self._record: IO[str] | None = None
        if script.get("record_file"):
            self._record = Path(script["record_file"]).open("a", encoding="utf-8")  # noqa: SIM115
        self._answers: dict[str, Frame] = {}

    # -- reading ---------------------------------------------------------------------------

    def read(self) -> Frame | None:
        """The parent's next frame, `None` at EOF."""
        while True:
            line = sys.stdin.buffer.readline()
            if not line:
                return None
            if self._record is not None:
                self._record.write(line.decode("utf-8", "replace"))
                self._record.flush()
            try:
                frame = json.loads(line)
            except ValueError:
                continue
            if isinstance(frame, dict):
                return cast(Frame, frame)

    def wait_answer(self, request_id: str) -> Frame | None:
        """Reads until the parent answers `request_id`; an interrupt ends the turn."""
        while request_id not in self._answers:
            frame = self.read()
            if frame is None:
                return None
            self._note(frame)
        return self._answers.pop(request_id)

    def _note(self, frame: Frame) -> None:
        if frame.get("type") == "control_response":
            response = _object(frame.get("response"))
            self._answers[str(response.get("request_id"))] = response
        elif frame.get("type") == "control_request":
            self._control(frame)
        elif frame.get("type") == "user":
            self._prompts.append(frame)  # queued, as the CLI queues a message sent mid-turn

    def _control(self, frame: Frame) -> None:
        request = _object(frame.get("request"))
        if request.get("subtype") == "interrupt":
            if self.script.get("ignore_interrupt"):
                return
            self.out.frame(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "success",
                        "request_id": frame.get("request_id"),
                        "response": {"still_queued": []},
                    },
                }
            )
            raise _Interrupted

    # -- the session -----------------------------------------------------------------------

    def run(self) -> int:
        self._install_hostility()
        frame = self.read()
        if frame is None:
            return 0
        if self.script.get("exit_code") is not None:
            return int(self.script["exit_code"])
        if self.resume is not None and not self._restore():
            return self._resume_missed()
        if self.script.get("hang_at") == "initialize":
            return self._hang()
        init = copy.deepcopy(_template("control_response"))
        init["response"]["request_id"] = frame.get("request_id") or ""
        if self.script.get("refuse_initialize"):
            init["response"] = {
                "subtype": "error",
                "request_id": frame.get("request_id"),
                "error": "SECRET-init-refused",
            }
        self.out.frame(init)
        turns = list(self.base.get("turns") or [])
        while self._next_prompt():
            overlay = _object(turns[self.turn]) if self.turn < len(turns) else {}
            self.script = {**self.base, **overlay}
            if self.script.get("echo_prompt"):
                content = _object(self.prompt.get("message")).get("content")
                self.script = {**self.script, "text": str(content)}
            self.turn += 1
            self._keep({"type": "user", "turn": self.turn})
            try:
                if self.script.get("replay"):
                    self._replay(str(self.script["replay"]))
                else:
                    self._turn()
            except _Interrupted:
                self._aborted()
        self._keep({"type": "cost-state", "totalCostUSD": self.cost_total})
        return self._linger()

    def _next_prompt(self) -> bool:
        """Waits for the parent's next user message; False at EOF."""
        while not self._prompts:
            frame = self.read()
            if frame is None:
                return False
            with contextlib.suppress(_Interrupted):  # between turns it stops nothing
                self._note(frame)
        self.prompt = self._prompts.popleft()
        return True

    def _transcript(self) -> Path | None:
        config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
        if not self.base.get("transcripts") or not config_dir:
            return None
        project = "".join(c if c.isalnum() else "-" for c in os.getcwd())
        return Path(config_dir) / "projects" / project / f"{self.session_id}.jsonl"

    def _keep(self, entry: Frame) -> None:
        if (path := self._transcript()) is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as stream:
                stream.write(json.dumps(entry) + "\n")

    def _restore(self) -> bool:
        """Reads the conversation to resume (its running cost); False when it is not kept."""
        path = self._transcript()
        if path is None or not path.is_file():
            return False
        for line in path.read_text("utf-8").splitlines():
            entry = _object(json.loads(line))
            if entry.get("type") == "cost-state":
                self.cost_total = float(entry["totalCostUSD"])
        return True

    def _resume_missed(self) -> int:
        frame = captured("resume-miss")[0]
        frame.update(session_id=self.resume, startup_failure_reason="resume_target_not_found")
        frame["errors"] = [f"No conversation found with session ID: {self.resume}"]
        self.out.frame(frame)
        return 1

    def _turn(self) -> None:
        script = self.script
        out = self.out
        system = copy.deepcopy(_template("system", "init"))
        system.update(cwd=os.getcwd(), session_id=self.session_id)
        out.frame(system)
        if script.get("grandchild"):
            self._spawn_grandchild(str(script["grandchild"]))
        if script.get("grandchild_holds_stdout"):
            self._spawn_grandchild("holds_stdout")
        if script.get("setsid_escapee"):
            self._spawn_grandchild("setsid")
        if script.get("echo_env"):
            names = list(script["echo_env"])
            script = {**script, "text": json.dumps({n: os.environ.get(n) for n in names})}
            self.script = script
        self._hostile_stream()
        if script.get("unknown_control"):
            self._ask({"subtype": "elicitation", "message": "SECRET-question"})
        if script.get("permission_storm"):
            self._storm(int(script["permission_storm"]))
        if script.get("tool"):
            self._tool(_object(script["tool"]))
        if script.get("api_retry_status"):
            retry = copy.deepcopy(_template("system", "api_retry", source="e401"))
            status = int(script["api_retry_status"])
            codes = {401: "authentication_failed", 403: "authentication_failed", 429: "rate_limit"}
            retry.update(
                error_status=status,
                error=codes.get(status, "server_error"),
                session_id=self.session_id,
            )
            out.frame(retry)
            if script.get("hang_at") != "prompt":
                self._hang_reading()
        for _ in range(int(script.get("flood", 0))):
            delta = {"type": "thinking_delta", "thinking": "x"}
            out.frame(
                self._stream_event({"type": "content_block_delta", "index": 0, "delta": delta})
            )
        if script.get("thinking"):
            self._message([{"type": "thinking", "thinking": str(script["thinking"])}])
        self._message([{"type": "text", "text": str(script.get("text", "PONG"))}], self._usage())
        if script.get("hang_at") == "prompt":
            self._hang_reading()
        if script.get("die_mid_frame") is not None:
            out.raw(b'{"type":"result","subtype":"succ')
            os._exit(int(script["die_mid_frame"]))
        out.frame(self._result())

    def _message(self, content: list[Frame], usage: Mapping[str, int] | None = None) -> None:
        """An assistant message: its stream events (when asked), then the whole message."""
        message_id = f"msg_fake_{time.monotonic_ns()}"
        if self.partials:
            chunks = int(self.script.get("chunks", 2))
            for event in _stream_events(message_id, content, chunks, usage):
                self.out.frame(self._stream_event(event))
        assistant = copy.deepcopy(_template("assistant"))
        assistant["message"].update(id=message_id, content=content)
        assistant["session_id"] = self.session_id
        if self.script.get("assistant_error"):
            assistant["error"] = self.script["assistant_error"]
            assistant["message"]["model"] = "<synthetic>"
        self.out.frame(assistant)

    def _stream_event(self, event: Frame) -> Frame:
        frame = copy.deepcopy(_template("stream_event"))
        frame.update(event=event, session_id=self.session_id)
        return frame

    def _usage(self) -> dict[str, int]:
        """The turn's token counts: the captured result's, with the scripted ones over them."""
        scripted = _object(_object(self.script.get("result")).get("usage"))
        usage = {**_template("result")["usage"], **scripted}
        return {k: v for k, v in usage.items() if k in _TOKEN_KEYS and type(v) is int}

    def _spend(self, template: Frame) -> float:
        """Adds this turn's cost (`cost`, else the captured frame's) to the running total."""
        self.cost_total += float(self.script.get("cost", template["total_cost_usd"]))
        return self.cost_total

    def _result(self) -> Frame:
        result = copy.deepcopy(_template("result"))
        result.update(session_id=self.session_id, result=str(self.script.get("text", "PONG")))
        result["total_cost_usd"] = self._spend(result)
        if self.schema or self.script.get("structured_output") is not None:
            value = self.script.get("structured_output", {"answer": "PONG"})
            result.update(structured_output=value, result=json.dumps(value), stop_reason="tool_use")
        result.update(_object(self.script.get("result")))
        return result

    def _aborted(self) -> None:
        result = copy.deepcopy(_template("result", source="stall"))
        result["session_id"] = self.session_id
        result["total_cost_usd"] = self._spend(result)
        self.out.frame(result)

    def _tool(self, tool: Mapping[str, Any]) -> None:
        name = str(tool.get("name", "Write"))
        tool_input = dict(tool.get("input") or {})
        call_id = "toolu_fake_1"
        self._message([{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}])
        answer = self._ask(
            {
                "subtype": "can_use_tool",
                "tool_name": name,
                "display_name": name,
                "input": tool_input,
                "description": "SECRET-title",
                "tool_use_id": call_id,
            }
        )
        allowed = answer is not None and _object(answer.get("response")).get("behavior") == "allow"
        if allowed and name == "Write":
            Path(tool_input["file_path"]).write_text(str(tool_input.get("content", "")), "utf-8")
        user = copy.deepcopy(_template("user", source="write"))
        block: Frame = {"tool_use_id": call_id, "type": "tool_result", "content": "done"}
        if not allowed:
            block.update(content="refused", is_error=True)
        user["message"]["content"] = [block]
        self.out.frame(user)

    def _ask(self, request: Frame) -> Frame | None:
        request_id = f"fake-{time.monotonic_ns()}"
        self.out.frame({"type": "control_request", "request_id": request_id, "request": request})
        return self.wait_answer(request_id)

    def _storm(self, count: int) -> None:
        ids: list[str] = []
        for index in range(count):
            request_id = f"storm-{index}"
            ids.append(request_id)
            self.out.frame(
                {
                    "type": "control_request",
                    "request_id": request_id,
                    "request": {
                        "subtype": "can_use_tool",
                        "tool_name": "Bash",
                        "input": {"command": "true"},
                        "tool_use_id": f"toolu_{index}",
                    },
                }
            )
        for request_id in ids:
            if self.wait_answer(request_id) is None:
                return

    def _replay(self, name: str) -> None:
        """Writes a captured conversation verbatim, waiting for each control answer."""
        for frame in captured(name)[1:]:
            self.out.frame(frame)
            if (
                frame.get("type") == "control_request"
                and self.wait_answer(str(frame.get("request_id"))) is None
            ):
                return
        if name in ("e401", "stall"):
            self._hang_reading()

    def _hostile_stream(self) -> None:
        script = self.script
        out = self.out
        for _ in range(int(script.get("flood_frames", 0))):
            out.frame(
                self._stream_event(
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": "x" * 1024},
                    }
                )
            )
        if script.get("garbage"):
            out.raw(b"\x00not json at all {{{\n")
        if script.get("huge_frame_bytes"):
            size = int(script["huge_frame_bytes"])
            out.raw(b'{"type":"stream_event","pad":"' + b"y" * size + b'"}\n')

    # -- hostility -------------------------------------------------------------------------

    def _install_hostility(self) -> None:
        if self.script.get("trap_sigterm"):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def _spawn_grandchild(self, how: str) -> None:
        code = "import time\nwhile True: time.sleep(1)\n"
        pid_file = self.script.get("pid_file")
        if how == "double_fork":
            launcher = (
                "import os, subprocess, sys\n"
                f"p = subprocess.Popen([sys.executable, '-c', {code!r}], start_new_session=True,"
                " stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
                "print(p.pid)\n"
            )
            done = subprocess.run(
                [sys.executable, "-c", launcher],
                capture_output=True,
                text=True,
                encoding="utf-8",
                check=True,
            )
            pid = int(done.stdout.strip())
        else:
            proc = subprocess.Popen(
                [sys.executable, "-c", code],
                start_new_session=how == "setsid",
                stdin=subprocess.DEVNULL,
                stdout=None if how == "holds_stdout" else subprocess.DEVNULL,
            )
            pid = proc.pid
        if pid_file:
            Path(pid_file).write_text(str(pid), "utf-8")

    def _hang(self) -> int:
        self._hang_reading()
        return self._linger()

    def _hang_reading(self) -> None:
        """Answers nothing more; returns at EOF (raises on interrupt)."""
        while True:
            frame = self.read()
            if frame is None:
                return
            self._note(frame)

    def _linger(self) -> int:
        """After the turn: wait for EOF (or ignore it), then exit."""
        try:
            self._hang_reading()
        except _Interrupted:
            pass
        if self.script.get("ignore_eof"):
            while True:
                time.sleep(3600)
        return 0


class _Interrupted(Exception):
    """The parent sent `interrupt`."""


def _stream_events(
    message_id: str, content: list[Frame], chunks: int, usage: Mapping[str, int] | None
) -> list[Frame]:
    opening: Frame = {"id": message_id, "type": "message", "role": "assistant", "content": []}
    if usage is not None:
        opening["usage"] = {**usage, "output_tokens": 1}  # as the API reports it at the start
    events: list[Frame] = [{"type": "message_start", "message": opening}]
    for index, block in enumerate(content):
        if block["type"] == "text":
            text = str(block["text"])
            size = max(1, -(-len(text) // max(1, chunks)))
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            for start in range(0, len(text), size):
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": text[start : start + size]},
                    }
                )
            events.append({"type": "content_block_stop", "index": index})
        elif block["type"] == "thinking":
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "thinking_delta", "thinking": block["thinking"]},
                }
            )
    if usage is not None:
        delta = {"stop_reason": "end_turn", "stop_sequence": None}
        events.append({"type": "message_delta", "delta": delta, "usage": usage})
    events.append({"type": "message_stop"})
    return events


def _object(value: object) -> Frame:
    return cast(Frame, value) if isinstance(value, dict) else {}


def run_fake_claude(argv: list[str] | None = None) -> int:
    """Serves one session on stdio; returns the exit code."""
    args = sys.argv[1:] if argv is None else argv
    with contextlib.suppress(BrokenPipeError):
        return FakeClaude(load_script(os.environ), args).run()
    return 0
