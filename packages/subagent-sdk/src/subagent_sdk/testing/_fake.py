"""The scripted fake SDK runtime: a real process speaking the wire, built on `subagent_sdk.wire`
(frames over the shared `subagent_core` stdio streams and line reader)."""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid
from datetime import UTC, datetime
from typing import Any, Final

import anyio
import anyio.abc

from subagent_sdk.wire import (
    EVENT_ASSISTANT_CHUNK,
    EVENT_ASSISTANT_MESSAGE,
    EVENT_INBOX_SPLICED,
    EVENT_TOOL_CALL,
    EVENT_TOOL_RESULT,
    EVENT_TURN_END,
    EVENT_TURN_START,
    INITIALIZE,
    INTERNAL_ERROR,
    SESSION_EVENT,
    SESSION_PROMPT,
    SESSION_STATUS,
    SHUTDOWN,
    SHUTTING_DOWN_MESSAGE,
    SUBAGENT_FINISHED,
    SUBAGENT_STARTED,
    FrameReader,
    FrameTooLargeError,
    FrameWriter,
    InitializeParams,
    InitializeResult,
    InvalidParamsError,
    JSONObject,
    JSONValue,
    PromptParams,
    Request,
    Response,
    SessionEvent,
    SessionStatus,
    SubagentFinished,
    SubagentStarted,
    encode_frame,
    notification_frame,
    open_stdio_streams,
    unknown_method_message,
)

from ._script import FakeScript

VERSION: Final = "0.0.0-fake"
_POLL_SECONDS: Final = 0.01
_SPLIT_PAUSE_SECONDS: Final = 0.02


def _now() -> str:
    return datetime.now(UTC).isoformat()


class _Runtime:
    def __init__(self, script: FakeScript, writer: FrameWriter) -> None:
        self.script = script
        self.writer = writer
        self.shutting_down = False
        self.exit_code = 0
        self.stop: anyio.CancelScope | None = None
        self._seq: dict[str, int] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._replies: dict[str, anyio.Event] = {}
        self._prompts = 0
        self._later_prompt = anyio.Event()
        """Set once a second `session/prompt` arrived: a hang without `go_file` ends there."""

    def finish(self, code: int) -> None:
        self.exit_code = code
        if self.stop is not None:
            self.stop.cancel()

    # ---- writing --------------------------------------------------------------------------

    async def notify(self, method: str, params: JSONObject) -> None:
        if not self.shutting_down:
            await self.writer.send_notification(method, params)

    async def event(self, session_id: str, kind: str, data: JSONObject) -> None:
        seq = self._seq.get(session_id, 0) + 1
        self._seq[session_id] = seq
        event = SessionEvent(session_id=session_id, type=kind, seq=seq, time=_now(), data=data)
        if "split" in self.script.noise and not self.shutting_down:
            await self.split_write(notification_frame(SESSION_EVENT, event.to_params()))
            return
        await self.notify(SESSION_EVENT, event.to_params())

    async def split_write(self, frame: JSONObject) -> None:
        # Cut inside the first multi-byte character, with a pause, so the reader sees it split.
        data = encode_frame(frame)
        cut = next((i + 1 for i, byte in enumerate(data) if byte >= 0xC0), len(data) // 2)
        await self.writer.send_bytes(data[:cut])
        await anyio.sleep(_SPLIT_PAUSE_SECONDS)
        await self.writer.send_bytes(data[cut:])

    async def status(self, session_id: str, status: str) -> None:
        await self.notify(
            SESSION_STATUS,
            SessionStatus(session_id=session_id, status=status).to_params(),  # type: ignore[arg-type]
        )

    async def text_turn(self, session_id: str, text: str, turn_end: JSONValue) -> None:
        await self.event(
            session_id, EVENT_ASSISTANT_CHUNK, {"chunk": {"type": "text-delta", "text": text}}
        )
        await self.event(
            session_id,
            EVENT_ASSISTANT_MESSAGE,
            {"message": {"role": "assistant", "content": [{"type": "text", "text": text}]}},
        )
        await self.event(session_id, EVENT_TURN_END, {"reason": turn_end})

    async def noise(self, phase: str) -> None:
        script = self.script
        if script.noise_at != phase:
            return
        for kind in script.noise:
            if kind == "garbage":
                for line in (
                    b"not json",
                    b"[1,2,3]",
                    b"42",
                    b'"text"',
                    b"{broken",
                    b"",
                    b"   ",
                    b"\r",
                    b'{"jsonrpc":"2.0"}',
                    b'{"jsonrpc":"2.0","method":7}',
                ):
                    await self.writer.send_bytes(line + b"\n")
            elif kind == "non-utf8":
                await self.writer.send_bytes(b"\xff\xfe\xc3(\x80 garbage\n")
                await self.writer.send_bytes(b'{"jsonrpc":"2.0","method":"x\xff","params":{}}\n')
            elif kind == "unknown-ids":
                await self.writer.send_result("req_" + "0" * 32, {"serverInfo": {}})
                await self.writer.send_result(12345, {})
                await self.writer.send_error(None, -32700, "Parse error")
            elif kind == "huge-line":
                await self.writer.send_bytes(b"x" * script.huge_line_bytes + b"\n")
            elif kind == "requests":
                await self.writer.send_request(
                    "srv-1", "fs/read_text_file", {"path": "/etc/passwd"}
                )

    async def foreign(self, message_id: str) -> None:
        other = "session-never-created"
        await self.event(
            other, EVENT_INBOX_SPLICED, {"inserted": [{"id": message_id, "role": "user"}]}
        )
        await self.text_turn(other, "FOREIGN TEXT", {"kind": "error", "error": {"message": "x"}})
        await self.status(other, "idle")

    async def round_trip(self) -> None:
        """A request to the client, awaiting its (refusal) answer: the client has read all
        that was written before it, so a test acting on the ready file sees that text taken."""
        request_id = f"sync-{uuid.uuid4().hex}"
        answered = self._replies[request_id] = anyio.Event()
        await self.writer.send_request(request_id, "runtime/sync", {})
        await answered.wait()

    def on_response(self, response: Response) -> None:
        if isinstance(response.id, str) and response.id in self._replies:
            self._replies.pop(response.id).set()

    async def wait_go(self) -> None:
        """The hang: until `go_file` exists, or without one until a later prompt arrives (the
        wire has no cancel, so a runtime runs a given-up turn out once the next one is asked
        for; the next turns then do not hang)."""
        script = self.script
        if script.ready_file:
            await anyio.Path(script.ready_file).write_text("ready", encoding="utf-8")
        if script.go_file is None:
            await self._later_prompt.wait()
            return
        go = anyio.Path(script.go_file)
        # A marker file written by the test is the only signal across processes here.
        while not await go.exists():  # noqa: ASYNC110
            await anyio.sleep(_POLL_SECONDS)

    # ---- requests -------------------------------------------------------------------------

    async def handle(self, request: Request) -> None:
        try:
            if request.method == INITIALIZE:
                await self.initialize(request)
            elif request.method == SESSION_PROMPT:
                await self.prompt(request)
            elif request.method == SHUTDOWN:
                if self.script.ignore_shutdown:
                    return
                await self.writer.send_result(request.id, {})
                self.shutting_down = True
                self.finish(0)
            else:
                await self.writer.send_error(
                    request.id, INTERNAL_ERROR, unknown_method_message(request.method)
                )
        except InvalidParamsError as error:
            await self.writer.send_error(request.id, INTERNAL_ERROR, str(error))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.finish(0)

    async def send_scripted_error(self, request: Request, error: dict[str, Any]) -> None:
        """Answers with a script's `{code?, message?, data?}` error (code default `-32603`)."""
        await self.writer.send_error(
            request.id,
            int(error.get("code", INTERNAL_ERROR)),
            str(error.get("message", "")),
            error.get("data"),
        )

    async def initialize(self, request: Request) -> None:
        script = self.script
        params = InitializeParams.from_params(request.params)
        if script.record_initialize:
            record = anyio.Path(script.record_initialize)
            async with await anyio.open_file(record, "a", encoding="utf-8") as handle:
                await handle.write(json.dumps(request.params) + "\n")
        await self.noise("initialize")
        if script.exit_code is not None:
            self.finish(script.exit_code)
            await anyio.sleep_forever()
        if script.hang_at == "initialize":
            await self.wait_go()
        if script.initialize_error is not None:
            await self.send_scripted_error(request, script.initialize_error)
            return
        if script.initialize_result is not None:
            await self.writer.send_result(request.id, script.initialize_result)
            return
        del params
        await self.writer.send_result(request.id, InitializeResult(version=VERSION).to_result())

    async def prompt(self, request: Request) -> None:
        script = self.script
        params = PromptParams.from_params(request.params)
        if self.shutting_down:
            await self.writer.send_error(request.id, INTERNAL_ERROR, SHUTTING_DOWN_MESSAGE)
            return
        if script.prompt_error is not None:
            await self.send_scripted_error(request, script.prompt_error)
            return
        if script.prompt_result is not None:
            await self.writer.send_result(request.id, script.prompt_result)
            return
        self._prompts += 1
        if self._prompts > 1:
            self._later_prompt.set()
        message_id = str(uuid.uuid4())
        session = params.session_id
        lock = self._locks.setdefault(session, anyio.Lock())
        await self.writer.send_result(request.id, {"messageId": message_id})
        async with lock:
            await self.turn(session, message_id, params.text)

    def answer(self, prompt: str) -> str:
        script = self.script
        if script.echo_prompt:
            return prompt
        if script.echo_cwd:
            return os.getcwd()
        if script.echo_identity:
            return f"pid={os.getpid()} sessions={len(self._locks)}"
        if script.echo_env:
            return "\n".join(
                f"{name}={os.environ.get(name, '<unset>')}" for name in script.echo_env
            )
        return script.text

    async def turn(self, session: str, message_id: str, text: str) -> None:
        script = self.script
        _start_sleepers(script)
        if script.stream_before_receipt is not None:
            await self.text_turn(session, script.stream_before_receipt, {"kind": "completed"})
            await self.status(session, "idle")
        await self.status(session, "running")
        await self.event(
            session,
            EVENT_INBOX_SPLICED,
            {
                "inserted": [
                    {"id": message_id, "role": "user", "content": [{"type": "text", "text": text}]}
                ]
            },
        )
        await self.event(session, EVENT_TURN_START, {})
        await self.noise("prompt")
        if "foreign-sessions" in script.noise and script.noise_at == "prompt":
            await self.foreign(message_id)
        if script.hang_at == "prompt":
            await self.wait_go()
        if script.malformed_event:
            await self.notify(SESSION_EVENT, {"sessionId": session, "event": "not an envelope"})
        answer = self.answer(text)
        await self.activity(session)
        await self.deltas(session, answer)
        if script.subagent is not None:
            await self.child(session)
        await self.keepalive(session)
        if script.hang_at == "deltas":
            await self.round_trip()
            await self.wait_go()
        if script.signal_during_prompt is not None:
            os.kill(os.getpid(), getattr(signal, script.signal_during_prompt))
            await anyio.sleep_forever()
        if script.exit_during_prompt is not None:
            sys.stderr.write("fake runtime: exiting during the prompt\n")
            sys.stderr.flush()
            self.finish(script.exit_during_prompt)
            await anyio.sleep_forever()
        await self.final_message(session, answer)
        if not script.omit_turn_end:
            await self.event(session, EVENT_TURN_END, {"reason": script.turn_end})
        if script.stream_after_turn_end is not None:
            late = script.stream_after_turn_end
            await self.event(
                session, EVENT_ASSISTANT_CHUNK, {"chunk": {"type": "text-delta", "text": late}}
            )
            await self.final_message(session, late)
        await self.status(session, "idle")

    async def keepalive(self, session: str) -> None:
        """`keepalive` `{"interval_seconds", "count"}`: `count` times, wait, then send
        `session.status running` (a frame that carries no output)."""
        spec = self.script.keepalive or {}
        interval = float(spec.get("interval_seconds", 0.1))
        for _ in range(int(spec.get("count", 0))):
            await anyio.sleep(interval)
            await self.status(session, "running")

    async def activity(self, session: str) -> None:
        """The scripted reasoning delta and tool calls (each call, then its result)."""
        script = self.script
        if script.reasoning is not None:
            chunk: JSONObject = {"type": "reasoning-delta", "text": script.reasoning}
            await self.event(session, EVENT_ASSISTANT_CHUNK, {"chunk": chunk})
        for _ in range(script.flood):
            flood: JSONObject = {"type": "reasoning-delta", "text": "x"}
            await self.event(session, EVENT_ASSISTANT_CHUNK, {"chunk": flood})
        for number, tool in enumerate(script.tools, start=1):
            call_id, name = f"call-{number}", str(tool.get("name", "tool"))
            await self.event(
                session, EVENT_TOOL_CALL, {"callId": call_id, "name": name, "arguments": {}}
            )
            result: JSONObject = {
                "callId": call_id,
                "name": name,
                "content": str(tool.get("content", "")),
                "isError": bool(tool.get("is_error", False)),
            }
            await self.event(session, EVENT_TOOL_RESULT, result)

    async def deltas(self, session: str, answer: str) -> None:
        count = self.script.deltas
        if count <= 0:
            return
        size = max(1, -(-len(answer) // count))
        pieces = [answer[i : i + size] for i in range(0, len(answer), size)] or [""]
        for piece in pieces:
            await self.event(
                session, EVENT_ASSISTANT_CHUNK, {"chunk": {"type": "text-delta", "text": piece}}
            )

    async def final_message(self, session: str, answer: str) -> None:
        script = self.script
        content: JSONValue
        if script.malformed_message:
            content = "not a list of blocks"
        elif script.empty_final_message:
            content = []
        elif script.final_message:
            content = [{"type": "text", "text": answer}]
        else:
            return
        await self.event(
            session, EVENT_ASSISTANT_MESSAGE, {"message": {"role": "assistant", "content": content}}
        )

    async def child(self, parent: str) -> None:
        spec = self.script.subagent or {}
        child = f"{parent}-child-{uuid.uuid4().hex[:8]}"
        text = str(spec.get("text", "child text"))
        turn_end: JSONValue = spec.get("turn_end", {"kind": "completed"})
        await self.notify(
            SUBAGENT_STARTED,
            SubagentStarted(parent_session_id=parent, child_session_id=child).to_params(),
        )
        await self.status(child, "running")
        await self.text_turn(child, text, turn_end)
        await self.status(child, "idle")
        await self.notify(
            SUBAGENT_FINISHED,
            SubagentFinished(
                provider="model",
                agent_id=f"agent-{child}",
                parent_session_id=parent,
                child_session_id=child,
                status="ok",
                stop_reason="completed",
                last_assistant_message=text,
            ).to_params(),
        )


def _start_sleepers(script: FakeScript) -> None:
    """`grandchild_holds_stdout` (in our group, holding stdout) and `setsid_escapee` (in a
    session of its own): grandchildren that never exit by themselves."""
    if sys.platform == "win32":
        return  # the fake's misbehaving grandchildren are POSIX ones
    argv = [sys.executable, "-c", "import threading; threading.Event().wait()"]
    no_stdin = (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)
    if script.grandchild_holds_stdout:
        os.posix_spawn(sys.executable, argv, os.environ, file_actions=[no_stdin])
    if script.setsid_escapee:
        no_stdout = (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)
        actions = [no_stdin, no_stdout]
        os.posix_spawn(sys.executable, argv, os.environ, file_actions=actions, setsid=True)


async def _watch_sigterm(runtime: _Runtime) -> None:
    try:
        with anyio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                runtime.finish(0)
    finally:
        # A tree kill may signal us twice (group, then pid); leaving the receiver restores the
        # default action, so ignore further SIGTERMs while exiting 0.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


async def _read_requests(
    runtime: _Runtime, receive: anyio.abc.ByteReceiveStream, task_group: anyio.abc.TaskGroup
) -> None:
    try:
        async for frame in FrameReader(receive):
            if isinstance(frame, Request) and (frame.method == SHUTDOWN or runtime.shutting_down):
                # Inline and shielded: the `shutdown` answer must be written even when stdin
                # ends right after it, and a request already read after it still gets its
                # answer (`SDK server is shutting down` for a prompt) before the exit.
                with anyio.CancelScope(shield=True):
                    await runtime.handle(frame)
            elif isinstance(frame, Request):
                task_group.start_soon(runtime.handle, frame)
            elif isinstance(frame, Response):
                runtime.on_response(frame)
    except (FrameTooLargeError, anyio.BrokenResourceError):
        pass


async def serve(script: FakeScript) -> int:
    """Runs the fake runtime on this process's stdio; returns the exit code."""
    trap = script.trap_sigterm or script.trap_term
    if trap and sys.platform != "win32":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    async with open_stdio_streams() as (receive, send):
        runtime = _Runtime(script, FrameWriter(send))
        async with anyio.create_task_group() as task_group:
            runtime.stop = task_group.cancel_scope
            if not trap and sys.platform != "win32":
                task_group.start_soon(_watch_sigterm, runtime)
            await _read_requests(runtime, receive, task_group)
            # stdin ended: exit 0, unless told to ignore EOF.
            if not script.ignore_eof:
                runtime.finish(runtime.exit_code)
            await anyio.sleep_forever()
        return runtime.exit_code


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m subagent_sdk.testing` (and `harness fake-sdk-runtime`)."""
    from ._script import load_script

    try:
        script = load_script(sys.argv[1:] if argv is None else argv)
    except (ValueError, OSError) as error:
        sys.stderr.write(f"fake-sdk-runtime: {error}\n")
        return 2
    if script.stderr is not None:
        sys.stderr.write(script.stderr + "\n")
        sys.stderr.flush()
    if script.exit_before_initialize is not None:
        return script.exit_before_initialize
    return anyio.run(serve, script)
