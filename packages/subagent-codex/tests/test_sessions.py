"""Sessions on the real `codex` binary against the loopback Responses stub, keyless.

A live session keeps one app-server for several turns; a resumable one keeps its thread's
rollout in its own `CODEX_HOME` under the state dir, so a fresh child (`thread/resume`)
continues the conversation after the first child is gone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import anyio
import pytest
from subagent_codex import CodexProvider
from subagent_core import (
    Budget,
    CancelSignal,
    MessageChunk,
    SessionRequest,
    SubagentRegistry,
    SubagentStartError,
    Usage,
)


def _registry(config) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(CodexProvider(config))
    return registry


def _sent_text(request: dict[str, object]) -> str:
    """Every text the stub received in one request (the conversation codex sent)."""
    return json.dumps(request.get("input"))


async def test_two_turns_live_on_one_child(stub_factory, stub_config, workspace: Path) -> None:
    stub = stub_factory(
        [
            {"text": "ONE", "usage": {"input": 10, "cached": 0, "output": 2}},
            {"text": "TWO", "usage": {"input": 30, "cached": 0, "output": 3}},
        ]
    )
    registry = _registry(stub_config(stub))
    with anyio.fail_after(90):
        async with await registry.open_session("codex", SessionRequest(cwd=workspace)) as session:
            first = await (await session.run("first prompt alpha")).result()
            second = await (await session.run("second prompt beta")).result()
            assert session.turns == 2
            assert session.usage == Usage(input_tokens=40, output_tokens=5, cached_input_tokens=0)
    assert (first.stop_reason, first.output) == ("completed", "ONE")
    assert (second.stop_reason, second.output) == ("completed", "TWO")
    assert first.usage == Usage(input_tokens=10, output_tokens=2, cached_input_tokens=0)
    assert second.usage == Usage(input_tokens=30, output_tokens=3, cached_input_tokens=0)
    assert "first prompt alpha" in _sent_text(stub.requests[1])
    assert not session.resumable


async def _first_turn(registry: SubagentRegistry, request: SessionRequest) -> str:
    async with await registry.open_session("codex", request) as session:
        result = await (await session.run("remember the word alpha")).result()
        assert (result.stop_reason, result.output) == ("completed", "ONE")
        return session.handle


async def test_a_cold_resume_continues_the_thread(
    stub_factory, stub_config, workspace: Path, tmp_path: Path
) -> None:
    stub = stub_factory(
        [
            {"text": "ONE", "usage": {"input": 10, "cached": 0, "output": 2}},
            {"text": "TWO", "usage": {"input": 30, "cached": 0, "output": 3}},
        ]
    )
    registry = _registry(stub_config(stub))
    state = tmp_path / "sessions"
    request = SessionRequest(cwd=workspace, state_dir=state)
    with anyio.fail_after(90):
        handle = await _first_turn(registry, request)
        async with await registry.resume_session("codex", handle, request) as resumed:
            again = await (await resumed.run("which word?")).result()
            assert resumed.handle == handle
            assert resumed.turns == 2
    assert (again.stop_reason, again.output) == ("completed", "TWO")
    assert again.usage == Usage(input_tokens=30, output_tokens=3, cached_input_tokens=0)
    assert "remember the word alpha" in _sent_text(stub.requests[1])
    record = json.loads((state / handle / "record.json").read_text(encoding="utf-8"))
    assert record["turns"] == 2
    assert (state / handle).stat().st_mode & 0o777 == 0o700
    assert (state / handle / "record.json").stat().st_mode & 0o777 == 0o600


async def test_a_resume_from_another_workspace_is_refused(
    stub_factory, stub_config, workspace: Path, tmp_path: Path
) -> None:
    stub = stub_factory([{"text": "ONE"}])
    registry = _registry(stub_config(stub, cwd=None))
    state = tmp_path / "sessions"
    other = tmp_path / "elsewhere"
    other.mkdir()
    with anyio.fail_after(90):
        handle = await _first_turn(registry, SessionRequest(cwd=workspace, state_dir=state))
        with pytest.raises(SubagentStartError) as raised:
            await registry.resume_session(
                "codex", handle, SessionRequest(cwd=other, state_dir=state)
            )
    assert raised.value.diagnostic == (
        "Subagent failure (provider: codex; stage: initialize; category: configuration)"
    )
    assert len(stub.requests) == 1


async def test_a_lost_rollout_is_a_resume_miss_never_a_fresh_start(
    stub_factory, stub_config, workspace: Path, tmp_path: Path
) -> None:
    stub = stub_factory([{"text": "ONE"}, {"text": "TWO"}])
    registry = _registry(stub_config(stub))
    state = tmp_path / "sessions"
    request = SessionRequest(cwd=workspace, state_dir=state)
    with anyio.fail_after(90):
        handle = await _first_turn(registry, request)
        shutil.rmtree(state / handle / "child" / "sessions")
        with pytest.raises(SubagentStartError) as raised:
            await registry.resume_session("codex", handle, request)
    assert raised.value.diagnostic == (
        "Subagent failure (provider: codex; stage: initialize; category: resume-miss)"
    )
    assert len(stub.requests) == 1


async def test_a_held_handle_is_busy_for_a_second_open(
    stub_factory, stub_config, workspace: Path, tmp_path: Path
) -> None:
    stub = stub_factory([{"text": "ONE"}])
    registry = _registry(stub_config(stub))
    state = tmp_path / "sessions"
    request = SessionRequest(cwd=workspace, state_dir=state)
    with anyio.fail_after(90):
        async with await registry.open_session("codex", request) as held:
            with pytest.raises(SubagentStartError) as raised:
                await registry.resume_session("codex", held.handle, request)
    assert raised.value.diagnostic == (
        "Subagent failure (provider: codex; stage: initialize; category: session-busy)"
    )


# -- on the fake app-server ----------------------------------------------------------------------

LINE = "Subagent failure (provider: codex; stage: {}; category: {}{})"


def _turn(text: str, usage: list[int]) -> list[dict[str, object]]:
    return [
        {"delta": text},
        {"usage": usage},
        {"message": text, "phase": "final_answer"},
        {"complete": "completed"},
    ]


async def test_three_turns_on_one_process_each_exact(fake_config, workspace: Path) -> None:
    turns = [_turn("one", [10, 0, 2]), _turn("two", [30, 1, 5]), _turn("three", [60, 1, 9])]
    registry = _registry(fake_config({"turns": turns}))
    with anyio.fail_after(60):
        async with await registry.open_session("codex", SessionRequest(cwd=workspace)) as session:
            results = [await (await session.run(p)).result() for p in ("a", "b", "c")]
            total = session.usage
    assert [(r.stop_reason, r.output, r.diagnostic) for r in results] == [
        ("completed", "one", None),
        ("completed", "two", None),
        ("completed", "three", None),
    ]
    assert [r.usage for r in results] == [
        Usage(input_tokens=10, output_tokens=2, cached_input_tokens=0),
        Usage(input_tokens=20, output_tokens=3, cached_input_tokens=1),
        Usage(input_tokens=30, output_tokens=4, cached_input_tokens=0),
    ]
    assert total == Usage(input_tokens=60, output_tokens=9, cached_input_tokens=1)


async def test_a_turn_cancelled_mid_stream_then_a_turn_that_completes(
    fake_config, workspace: Path
) -> None:
    turns = [[{"delta": "partial"}, {"until_interrupt": True}], _turn("after", [5, 0, 1])]
    registry = _registry(fake_config({"turns": turns}))
    cancel = CancelSignal()
    with anyio.fail_after(60):
        async with await registry.open_session("codex", SessionRequest(cwd=workspace)) as session:
            run = await session.run("first", cancel=cancel)
            async for event in run.events():
                if isinstance(event, MessageChunk):
                    cancel.cancel()
            aborted = await run.result()
            after = await (await session.run("second")).result()
    assert (aborted.stop_reason, aborted.output, aborted.diagnostic) == ("aborted", "partial", None)
    assert (after.stop_reason, after.output) == ("completed", "after")


async def test_a_child_killed_between_turns_makes_the_next_turn_classified(
    fake_config, workspace: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    turns = [[{"pid_to": str(pid_file)}, *_turn("one", [1, 0, 1])], _turn("two", [2, 0, 2])]
    registry = _registry(fake_config({"turns": turns}))
    with anyio.fail_after(60):
        async with await registry.open_session("codex", SessionRequest(cwd=workspace)) as session:
            assert (await (await session.run("a")).result()).output == "one"
            os.kill(int(pid_file.read_text(encoding="utf-8")), signal.SIGKILL)
            later = await (await session.run("b")).result()
            closed = await session.aclose()
    assert later.stop_reason == "error"
    assert later.diagnostic == LINE.format("process", "process-exit", "; signal: SIGKILL")
    assert closed is None


async def test_a_budget_crossed_on_turn_two_interrupts_it(fake_config, workspace: Path) -> None:
    turns = [
        _turn("one", [10, 0, 2]),
        [{"usage": [40, 0, 4]}, {"until_interrupt": True}],
    ]
    registry = _registry(fake_config({"turns": turns}))
    request = SessionRequest(cwd=workspace, budget=Budget(max_tokens=30))
    with anyio.fail_after(60):
        async with await registry.open_session("codex", request) as session:
            first = await (await session.run("a")).result()
            async with await session.run("b") as crossing:
                second = await crossing.result()
            after = await (await session.run("c")).result()
    assert first.stop_reason == "completed"
    assert (second.stop_reason, second.diagnostic) == ("error", LINE.format("prompt", "budget", ""))
    assert (after.stop_reason, after.diagnostic) == ("error", LINE.format("prompt", "budget", ""))


async def test_a_cold_resume_on_the_fake_sees_the_earlier_prompts(
    fake_config, workspace: Path, tmp_path: Path
) -> None:
    registry = _registry(fake_config({"echo_history": True}))
    request = SessionRequest(cwd=workspace, state_dir=tmp_path / "state")
    with anyio.fail_after(60):
        async with await registry.open_session("codex", request) as session:
            first = await (await session.run("alpha")).result()
            handle = session.handle
        async with await registry.resume_session("codex", handle, request) as resumed:
            second = await (await resumed.run("beta")).result()
    assert first.output == "seen: alpha"
    assert second.output == "seen: alpha | beta"
