"""Sessions of the in-process `model` provider, through the registry, on the scripted server.

A session is the child's conversation: each turn's request carries the earlier turns'
messages. A resumable session stores the history after each turn, and a fresh provider
continues it; a missing or broken history is a `resume-miss`, never a fresh start. A budget
counts every turn's reported usage and stops the turn whose report crosses it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from model_agent import AgentConfig, ModelEndpoint, ModelProvider
from model_agent import _model_session as model_session
from model_agent.testing import ScriptedModelServer, open_scripted_model_server
from subagent_core import (
    Budget,
    CancelSignal,
    MessageChunk,
    SessionRequest,
    SubagentError,
    SubagentEvent,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
    Usage,
    UsageEvent,
)

BUDGET_LINE = "Subagent failure (provider: model; stage: answer; category: budget)"


def _line(category: str) -> str:
    return f"Subagent failure (provider: model; stage: initialize; category: {category})"


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def _registry(server: ScriptedModelServer, workspace: Path) -> SubagentRegistry:
    """A registry with a fresh `ModelProvider` on `server` (as a new parent process has)."""
    endpoint = ModelEndpoint(base_url=server.base_url, api_key="unused", model="scripted")
    registry = SubagentRegistry()
    registry.register(
        ModelProvider(AgentConfig(endpoint=endpoint, workspace=workspace, mode="execute"))
    )
    return registry


def _conversation(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The (role, content) pairs a request sent, without the system prompt."""
    return [
        (message["role"], message["content"])
        for message in body["messages"]
        if message["role"] != "system"
    ]


async def test_three_turns_keep_the_conversation_and_their_own_usage(workspace: Path) -> None:
    replies = [
        {"text": "ONE", "usage": _usage(5, 1)},
        {"text": "TWO", "usage": _usage(9, 2)},
        {"text": "THREE", "usage": _usage(14, 3)},
    ]
    script = {"rules": [{"match": "[s] one", "replies": replies}]}
    results: list[SubagentResult] = []
    events: list[list[SubagentEvent]] = []
    async with open_scripted_model_server(script) as server:
        registry = _registry(server, workspace)
        with anyio.fail_after(30):
            async with await registry.open_session("model", SessionRequest()) as session:
                for prompt in ("[s] one", "two", "three"):
                    async with await session.run(prompt) as run:
                        events.append([event async for event in run.events()])
                        results.append(await run.result())
                assert (session.turns, session.resumable) == (3, False)
                assert session.usage == Usage(input_tokens=28, output_tokens=6)
    usages = [Usage(input_tokens=5, output_tokens=1), Usage(input_tokens=9, output_tokens=2)]
    usages.append(Usage(input_tokens=14, output_tokens=3))
    assert results == [
        SubagentResult(stop_reason="completed", output=text, usage=usage)
        for text, usage in zip(("ONE", "TWO", "THREE"), usages, strict=True)
    ]
    assert events[1] == [MessageChunk(text="TWO"), UsageEvent(input_tokens=9, output_tokens=2)]
    assert _conversation(server.requests[1]) == [
        ("user", "[s] one"),
        ("assistant", "ONE"),
        ("user", "two"),
    ]
    assert _conversation(server.requests[2])[-3:] == [
        ("user", "two"),
        ("assistant", "TWO"),
        ("user", "three"),
    ]


async def test_a_turn_cancelled_mid_stream_then_a_next_turn_completes(workspace: Path) -> None:
    replies = [
        {"text": "partial", "hang": "after-text"},
        {"text": "DONE", "usage": _usage(6, 2)},
    ]
    script = {"rules": [{"match": "[c] first", "replies": replies}]}
    cancel = CancelSignal()
    async with open_scripted_model_server(script) as server:
        registry = _registry(server, workspace)
        with anyio.fail_after(30):
            async with await registry.open_session("model", SessionRequest()) as session:
                first = await session.run("[c] first", cancel=cancel)
                async for event in first.events():
                    if event == MessageChunk(text="partial"):
                        with pytest.raises(SubagentError) as busy:
                            await session.run("too soon")
                        cancel.cancel()
                aborted = await first.result()
                completed = await (await session.run("second")).result()
                assert session.usage == Usage(input_tokens=6, output_tokens=2)
    assert busy.value.code == "TURN_IN_PROGRESS"
    assert aborted == SubagentResult(stop_reason="aborted", output="partial")
    assert completed == SubagentResult(
        stop_reason="completed", output="DONE", usage=Usage(input_tokens=6, output_tokens=2)
    )
    # The cancelled turn's prompt stays in the conversation; its cut answer does not.
    assert _conversation(server.requests[1]) == [("user", "[c] first"), ("user", "second")]


async def test_each_turn_asks_for_its_own_output_schema(workspace: Path) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    replies = [{"text": "plain"}, {"json": {"n": 2}}]
    script = {"rules": [{"match": "[j] one", "replies": replies}]}
    async with open_scripted_model_server(script) as server:
        registry = _registry(server, workspace)
        with anyio.fail_after(30):
            async with await registry.open_session("model", SessionRequest()) as session:
                plain = await (await session.run("[j] one")).result()
                shaped = await (await session.run("two", output_schema=schema)).result()
    assert (plain.output, plain.structured_output) == ("plain", None)
    assert (shaped.stop_reason, shaped.structured_output) == ("completed", {"n": 2})
    first_format, second_format = server.response_formats
    assert first_format is None
    assert isinstance(second_format, dict)


async def _first_turn(registry: SubagentRegistry, request: SessionRequest) -> str:
    async with await registry.open_session("model", request) as session:
        result = await (await session.run("[r] remember the word alpha")).result()
        assert (result.stop_reason, result.output) == ("completed", "ONE")
        return session.handle


async def test_a_resume_in_a_fresh_provider_continues_the_stored_history(
    workspace: Path, tmp_path: Path
) -> None:
    replies = [{"text": "ONE", "usage": _usage(5, 1)}, {"text": "TWO", "usage": _usage(9, 2)}]
    script = {"rules": [{"match": "[r]", "replies": replies}]}
    state = tmp_path / "sessions"
    request = SessionRequest(cwd=workspace, state_dir=state)
    async with open_scripted_model_server(script) as server:
        with anyio.fail_after(30):
            handle = await _first_turn(_registry(server, workspace), request)
            fresh = _registry(server, workspace)
            async with await fresh.resume_session("model", handle, request) as resumed:
                again = await (await resumed.run("which word?")).result()
                assert (resumed.handle, resumed.turns, resumed.resumable) == (handle, 2, True)
                assert resumed.usage == Usage(input_tokens=14, output_tokens=3)
    assert (again.stop_reason, again.output) == ("completed", "TWO")
    assert _conversation(server.requests[1]) == [
        ("user", "[r] remember the word alpha"),
        ("assistant", "ONE"),
        ("user", "which word?"),
    ]
    folder = state / handle
    record = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    assert (record["turns"], record["input_tokens"], record["cwd"]) == (2, 14, str(workspace))
    stored = folder / "child" / model_session.HISTORY_FILE
    assert stored.stat().st_mode & 0o777 == 0o600
    assert (folder / "child").stat().st_mode & 0o777 == 0o700
    assert [message["content"] for message in json.loads(stored.read_text("utf-8"))] == [
        "[r] remember the word alpha",
        "ONE",
        "which word?",
        "TWO",
    ]


@pytest.mark.parametrize(
    "damage",
    [
        "missing",
        "not json",
        "unanswered tool call",
        "too large",
    ],
)
async def test_a_lost_or_broken_history_is_a_resume_miss(
    workspace: Path, tmp_path: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = {"rules": [{"match": "[r]", "replies": [{"text": "ONE"}, {"text": "never"}]}]}
    state = tmp_path / "sessions"
    request = SessionRequest(cwd=workspace, state_dir=state)
    async with open_scripted_model_server(script) as server:
        with anyio.fail_after(30):
            if damage == "too large":
                # The turn's history is over the bound: none is left stored, nothing stale.
                monkeypatch.setattr(model_session, "MAX_HISTORY_BYTES", 16)
            handle = await _first_turn(_registry(server, workspace), request)
            stored = state / handle / "child" / model_session.HISTORY_FILE
            if damage == "missing":
                stored.unlink()
            elif damage == "not json":
                stored.write_bytes(b"\xff{ not json")
            elif damage == "unanswered tool call":
                call = {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "x", "arguments": "{}"},
                }
                broken = [{"role": "assistant", "content": "", "tool_calls": [call]}]
                stored.write_text(json.dumps(broken), encoding="utf-8")
            else:
                assert not stored.exists()
            with pytest.raises(SubagentStartError) as raised:
                await _registry(server, workspace).resume_session("model", handle, request)
        assert server.request_count == 1
    assert raised.value.diagnostic == _line("resume-miss")


async def test_resume_refusals_another_workspace_and_a_held_handle(
    workspace: Path, tmp_path: Path
) -> None:
    script = {"rules": [{"match": "[r]", "replies": [{"text": "ONE"}]}]}
    state = tmp_path / "sessions"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    request = SessionRequest(cwd=workspace, state_dir=state)
    async with open_scripted_model_server(script) as server:
        registry = _registry(server, workspace)
        with anyio.fail_after(30):
            handle = await _first_turn(registry, request)
            other = SessionRequest(cwd=elsewhere, state_dir=state)
            with pytest.raises(SubagentStartError) as moved:
                await registry.resume_session("model", handle, other)
            async with await registry.resume_session("model", handle, request):
                with pytest.raises(SubagentStartError) as busy:
                    await _registry(server, workspace).resume_session("model", handle, request)
        assert server.request_count == 1
    assert moved.value.diagnostic == _line("configuration")
    assert busy.value.diagnostic == _line("session-busy")


async def test_a_session_budget_stops_the_turn_that_crosses_it(workspace: Path) -> None:
    listing = {
        "tool_calls": [{"name": "list_directory", "arguments": {"path": "."}}],
        "usage": _usage(8, 2),
    }
    replies = [{"text": "ONE", "usage": _usage(5, 2)}, listing, {"text": "never"}]
    script = {"rules": [{"match": "[b] one", "replies": replies}]}
    request = SessionRequest(budget=Budget(max_tokens=15))
    async with open_scripted_model_server(script) as server:
        registry = _registry(server, workspace)
        with anyio.fail_after(30):
            async with await registry.open_session("model", request) as session:
                first = await (await session.run("[b] one")).result()
                async with await session.run("list the files") as crossing:
                    second = await crossing.result()
                spent = await (await session.run("again")).result()
                assert session.usage == Usage(input_tokens=13, output_tokens=4)
        # The crossing round's tool call never ran and no further request was made.
        assert server.request_count == 2
    assert first == SubagentResult(
        stop_reason="completed", output="ONE", usage=Usage(input_tokens=5, output_tokens=2)
    )
    assert second == SubagentResult(
        stop_reason="error", diagnostic=BUDGET_LINE, usage=Usage(input_tokens=8, output_tokens=2)
    )
    assert (spent.stop_reason, spent.diagnostic, spent.usage) == ("error", BUDGET_LINE, None)


async def test_a_one_shot_budget_stops_the_run_that_crosses_it(workspace: Path) -> None:
    listing = {
        "tool_calls": [{"name": "list_directory", "arguments": {"path": "."}}],
        "usage": _usage(8, 2),
    }
    script = {"rules": [{"match": "[o]", "replies": [listing, {"text": "never"}]}]}
    request = SubagentRequest(prompt="[o] go", cwd=workspace, budget=Budget(max_tokens=9))
    async with open_scripted_model_server(script) as server:
        registry = _registry(server, workspace)
        with anyio.fail_after(30):
            async with await registry.start("model", request) as run:
                result = await run.result()  # a one-shot child starts here
                events = [event async for event in run.events()]
        assert server.request_count == 1
    assert result == SubagentResult(
        stop_reason="error", diagnostic=BUDGET_LINE, usage=Usage(input_tokens=8, output_tokens=2)
    )
    assert events[-1] == UsageEvent(input_tokens=8, output_tokens=2)


async def test_aclose_stops_a_running_turn_and_ends_the_session(workspace: Path) -> None:
    script = {"rules": [{"match": "[a]", "replies": [{"text": "partial", "hang": "after-text"}]}]}
    async with open_scripted_model_server(script) as server:
        registry = _registry(server, workspace)
        with anyio.fail_after(30):
            session = await registry.open_session("model", SessionRequest())
            run = await session.run("[a] go")
            async for event in run.events():
                if event == MessageChunk(text="partial"):
                    assert await session.aclose() is None
            result = await run.result()
            assert await session.aclose() is None
            with pytest.raises(SubagentError) as closed:
                await session.run("more")
    assert result == SubagentResult(stop_reason="aborted", output="partial")
    assert closed.value.code == "SESSION_CLOSED"


async def test_a_cancelled_session_request_starts_nothing(workspace: Path, tmp_path: Path) -> None:
    async with open_scripted_model_server({"rules": []}) as server:
        registry = _registry(server, workspace)
        cancel = CancelSignal()
        cancel.cancel()
        state = tmp_path / "sessions"
        with pytest.raises(SubagentStartError) as raised:
            await registry.open_session("model", SessionRequest(cancel=cancel, state_dir=state))
    assert str(raised.value) == "subagent request was aborted before the model child started"
    assert list(state.iterdir()) == []
