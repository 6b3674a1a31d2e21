"""`harness sdk-runtime` on the raw wire of sdk.md: receipts, envelopes, status, exit rules."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_core import child_env
from subagent_core.kit import ManagedProcess, ProcessOutcome, open_managed_process

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


class Wire:
    """Writes requests, reads every frame the runtime sends."""

    def __init__(self, process: ManagedProcess) -> None:
        self.process = process
        self.frames: list[dict[str, Any]] = []
        self._buffer = b""
        self._next = 0

    async def send(self, method: str, params: dict[str, Any]) -> str:
        self._next += 1
        request_id = f"req_{self._next:032x}"
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(frame).encode() + b"\n")
        return request_id

    async def next_frame(self) -> dict[str, Any] | None:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            try:
                self._buffer += await self.process.stdout.receive()
            except anyio.EndOfStream:
                return None
        line, self._buffer = self._buffer.split(b"\n", 1)
        frame = json.loads(line)
        self.frames.append(frame)
        return frame

    async def until(self, predicate: Any) -> dict[str, Any]:
        while True:
            frame = await self.next_frame()
            assert frame is not None, "the runtime closed stdout"
            if predicate(frame):
                return frame

    async def response(self, request_id: str) -> dict[str, Any]:
        return await self.until(lambda f: f.get("id") == request_id and "method" not in f)

    async def idle(self, session_id: str) -> None:
        await self.until(
            lambda f: (
                f.get("method") == "session.status"
                and f["params"] == {"sessionId": session_id, "status": "idle"}
            )
        )

    def events(self, session_id: str) -> list[dict[str, Any]]:
        return [
            f["params"]["event"]
            for f in self.frames
            if f.get("method") == "session.event" and f["params"]["sessionId"] == session_id
        ]


@asynccontextmanager
async def open_runtime(
    base_url: str, workspace: Path, *extra: str, state_dir: Path | None = None
) -> AsyncIterator[Wire]:
    # Sessions are stored per id: a private state dir keeps test ids like "s1" apart.
    state = state_dir if state_dir is not None else workspace.parent / "state"
    async with open_managed_process(
        [
            sys.executable,
            "-m",
            "harness",
            "sdk-runtime",
            "--base-url",
            base_url,
            "--state-dir",
            str(state),
            *extra,
        ],
        cwd=workspace,
        env=child_env({}),
        eof_grace_seconds=5.0,
        term_grace_seconds=0.5,
        kill_grace_seconds=1.0,
    ) as process:
        yield Wire(process)


async def _initialize(wire: Wire, workspace: Path) -> dict[str, Any]:
    request = await wire.send(
        "initialize", {"cwd": str(workspace), "provider": "deepseek-official", "model": "m"}
    )
    return await wire.response(request)


async def _exit(wire: Wire) -> ProcessOutcome:
    with anyio.fail_after(20):
        while await wire.next_frame() is not None:
            pass
        return await wire.process.wait()


async def test_initialize_prompt_and_shutdown(scripted_model: Any, workspace: Path) -> None:
    rules = [{"match": "hello", "replies": [{"text": "Hi there.", "chunks": 2}]}]
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_runtime(server.base_url, workspace) as wire,
        ):
            init = await _initialize(wire, workspace)
            assert init["result"] == {
                "serverInfo": {"name": "deepseek-harness-sdk-runtime", "version": "0.1.0"}
            }
            request = await wire.send(
                "session/prompt",
                {"sessionId": "s1", "contentBlocks": [{"type": "text", "text": "hello"}]},
            )
            receipt = await wire.response(request)
            message_id = receipt["result"]["messageId"]
            await wire.idle("s1")
            shutdown = await wire.send("shutdown", {})
            assert (await wire.response(shutdown))["result"] == {}
            outcome = await _exit(wire)
    assert outcome == ProcessOutcome(0, None)
    events = wire.events("s1")
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["type"] for e in events] == [
        "agent/inbox/spliced",
        "turn/start",
        "assistant/chunk",
        "assistant/chunk",
        "assistant/message",
        "turn/end",
    ]
    assert events[0]["data"]["inserted"][0]["id"] == message_id
    assert [e["data"]["chunk"]["type"] for e in events[2:4]] == ["text-delta", "text-delta"]
    assert "".join(e["data"]["chunk"]["text"] for e in events[2:4]) == "Hi there."
    assert events[4]["data"]["message"]["content"] == [{"type": "text", "text": "Hi there."}]
    assert events[5]["data"]["reason"] == {"kind": "completed"}
    statuses = [f["params"]["status"] for f in wire.frames if f.get("method") == "session.status"]
    assert statuses == ["running", "idle"]
    after = wire.frames.index(next(f for f in wire.frames if f.get("id") == shutdown))
    assert wire.frames[after + 1 :] == []


async def test_errors_use_the_runtime_vocabulary(scripted_model: Any, workspace: Path) -> None:
    with anyio.fail_after(60):
        async with scripted_model([]) as server, open_runtime(server.base_url, workspace) as wire:
            bad = await wire.send(
                "initialize",
                {"cwd": str(workspace), "provider": "p", "model": "m", "maxTokens": 0},
            )
            unknown = await wire.send("session/fork", {})
            assert (await wire.response(bad))["error"] == {
                "code": -32603,
                "message": "initialize maxTokens must be a positive safe integer",
            }
            assert (await wire.response(unknown))["error"] == {
                "code": -32603,
                "message": "unknown DeepSeek Harness SDK runtime method: session/fork",
            }
            await wire.process.close_stdin()
            outcome = await _exit(wire)
    assert outcome == ProcessOutcome(0, None)


async def test_a_failed_turn_ends_with_kind_error(scripted_model: Any, workspace: Path) -> None:
    rules = [{"match": "boom", "replies": [{"status": 500}]}]
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_runtime(server.base_url, workspace) as wire,
        ):
            await _initialize(wire, workspace)
            await wire.send(
                "session/prompt",
                {"sessionId": "s1", "contentBlocks": [{"type": "text", "text": "boom"}]},
            )
            await wire.idle("s1")
    ends = [e for e in wire.events("s1") if e["type"] == "turn/end"]
    assert [e["data"]["reason"]["kind"] for e in ends] == ["error"]
    assert ends[0]["data"]["reason"]["error"] == {
        "message": "the model turn failed",
        "code": "turn-failed",
    }


@pytest.mark.parametrize(
    ("finish_reason", "reason"),
    [("content_filter", {"kind": "blocked"}), ("length", {"kind": "max-tokens"})],
)
async def test_a_refusal_is_blocked_and_a_length_finish_is_max_tokens(
    finish_reason: str, reason: dict[str, Any], scripted_model: Any, workspace: Path
) -> None:
    rules = [{"match": "limit", "replies": [{"text": "no", "finish_reason": finish_reason}]}]
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_runtime(server.base_url, workspace) as wire,
        ):
            await _initialize(wire, workspace)
            await wire.send(
                "session/prompt",
                {"sessionId": "s1", "contentBlocks": [{"type": "text", "text": "limit"}]},
            )
            await wire.idle("s1")
    ends = [e["data"]["reason"] for e in wire.events("s1") if e["type"] == "turn/end"]
    assert ends == [reason]


async def test_prompts_to_one_session_queue(scripted_model: Any, workspace: Path) -> None:
    # The second prompt continues the session, so its request still starts with "first".
    rules = [{"match": "first", "replies": [{"text": "one"}, {"text": "two"}]}]
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_runtime(server.base_url, workspace) as wire,
        ):
            await _initialize(wire, workspace)
            for text in ("first", "second"):
                await wire.send(
                    "session/prompt",
                    {"sessionId": "s1", "contentBlocks": [{"type": "text", "text": text}]},
                )
            await wire.until(
                lambda f: (
                    f.get("method") == "session.event"
                    and f["params"]["event"]["type"] == "turn/end"
                    and f["params"]["event"]["seq"] > 6
                )
            )
            await wire.idle("s1")
    kinds = [e["type"] for e in wire.events("s1")]
    assert kinds.count("turn/end") == 2
    first_end = kinds.index("turn/end")
    assert kinds[first_end + 1] == "agent/inbox/spliced"
    texts = [
        e["data"]["message"]["content"][0]["text"]
        for e in wire.events("s1")
        if e["type"] == "assistant/message"
    ]
    assert texts == ["one", "two"]


async def test_in_process_children_are_announced(scripted_model: Any, workspace: Path) -> None:
    rules = [
        {"match": "CHILD-TASK", "replies": [{"text": "child done"}]},
        {
            "match": "delegate it",
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "subagent_delegate",
                            "arguments": {"task": "CHILD-TASK: say done", "description": "kid"},
                        }
                    ]
                },
                {"text": "parent done"},
            ],
        },
    ]
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_runtime(server.base_url, workspace) as wire,
        ):
            await _initialize(wire, workspace)
            await wire.send(
                "session/prompt",
                {"sessionId": "s1", "contentBlocks": [{"type": "text", "text": "delegate it"}]},
            )
            await wire.idle("s1")
    started = [f["params"] for f in wire.frames if f.get("method") == "subagent.started"]
    finished = [f["params"] for f in wire.frames if f.get("method") == "subagent.finished"]
    assert len(started) == 1
    assert started[0]["parentSessionId"] == "s1"
    assert len(finished) == 1
    child = finished[0]
    assert child["childSessionId"] == started[0]["childSessionId"]
    assert {k: child[k] for k in ("provider", "parentSessionId", "status", "stopReason")} == {
        "provider": "model",
        "parentSessionId": "s1",
        "status": "ok",
        "stopReason": "completed",
    }
    # The child streams on its own session id between started and finished.
    child_events = wire.events(child["childSessionId"])
    assert [e["type"] for e in child_events] == ["turn/start", "assistant/chunk", "turn/end"]
    assert [e["seq"] for e in child_events] == [1, 2, 3]
    assert child_events[1]["data"]["chunk"] == {"type": "text-delta", "text": "child done"}
    assert child_events[2]["data"]["reason"] == {"kind": "completed"}
    child_statuses = [
        f["params"]["status"]
        for f in wire.frames
        if f.get("method") == "session.status"
        and f["params"]["sessionId"] == child["childSessionId"]
    ]
    assert child_statuses == ["running", "idle"]


@pytest.mark.parametrize("how", ["eof", "sigterm", "shutdown"])
async def test_ending_the_runtime_mid_turn_stops_the_command(
    how: str, scripted_model: Any, workspace: Path, wait_for_pid: Any, process_gone: Any
) -> None:
    rules = [
        {
            "match": "long job",
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "process_execute",
                            "arguments": {"command": "echo $$ > started; exec sleep 60"},
                        }
                    ]
                },
                {"text": "never"},
            ],
        }
    ]
    marker = workspace / "started"
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_runtime(server.base_url, workspace) as wire,
        ):
            await _initialize(wire, workspace)
            await wire.send(
                "session/prompt",
                {"sessionId": "s1", "contentBlocks": [{"type": "text", "text": "long job"}]},
            )
            pid = await wait_for_pid(marker)
            if how == "eof":
                await wire.process.close_stdin()
            elif how == "sigterm":
                wire.process.raw.send_signal(signal.SIGTERM)
            else:
                await wire.send("shutdown", {})
            outcome = await _exit(wire)
    assert outcome == ProcessOutcome(0, None)
    assert process_gone(pid)


def _texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (m["role"], m["content"])
        for m in request["messages"]
        if m["role"] in ("user", "assistant") and m.get("content")
    ]


async def _ask(wire: Wire, session_id: str, text: str) -> None:
    await wire.send(
        "session/prompt",
        {"sessionId": session_id, "contentBlocks": [{"type": "text", "text": text}]},
    )
    await wire.idle(session_id)


async def test_a_session_continues_its_conversation_across_a_restart(
    scripted_model: Any, workspace: Path, tmp_path: Path
) -> None:
    rules = [
        {
            "match": "my number is 41",
            "replies": [{"text": "Noted."}, {"text": "42."}, {"text": "43."}],
        }
    ]
    state = tmp_path / "sdk-state"
    with anyio.fail_after(90):
        async with scripted_model(rules) as server:
            async with open_runtime(server.base_url, workspace, state_dir=state) as wire:
                await _initialize(wire, workspace)
                await _ask(wire, "s1", "my number is 41")
                await _ask(wire, "s1", "add one")
                assert _texts(server.requests[-1]) == [
                    ("user", "my number is 41"),
                    ("assistant", "Noted."),
                    ("user", "add one"),
                ]
                await wire.process.close_stdin()
                assert await _exit(wire) == ProcessOutcome(0, None)
            async with open_runtime(server.base_url, workspace, state_dir=state) as wire:
                await _initialize(wire, workspace)
                await _ask(wire, "s1", "add one more")
                await wire.process.close_stdin()
                assert await _exit(wire) == ProcessOutcome(0, None)
    assert _texts(server.requests[-1]) == [
        ("user", "my number is 41"),
        ("assistant", "Noted."),
        ("user", "add one"),
        ("assistant", "42."),
        ("user", "add one more"),
    ]


async def test_an_over_long_line_is_skipped_and_serving_goes_on(
    scripted_model: Any, workspace: Path
) -> None:
    with anyio.fail_after(60):
        async with scripted_model([]) as server, open_runtime(server.base_url, workspace) as wire:
            assert wire.process.stdin is not None
            await wire.process.stdin.send(b"x" * (16 * 1024 * 1024 + 10) + b"\n")
            init = await _initialize(wire, workspace)
            assert init["result"]["serverInfo"]["name"] == "deepseek-harness-sdk-runtime"
            await wire.process.close_stdin()
            assert await _exit(wire) == ProcessOutcome(0, None)
