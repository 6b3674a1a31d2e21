"""Sessions on the fake ACP child: several turns on one process, budgets, cold resume by handle.

A session is one ACP session of one child: each turn is another `session/prompt`; a resume is
a fresh child that continues the recorded session (`session/resume`, else `session/load`)
from the agent's own store (the fake's `state_dir`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import (
    Budget,
    CancelSignal,
    Cost,
    MessageChunk,
    SessionRequest,
    SubagentEvent,
    SubagentRegistry,
    SubagentRun,
    SubagentStartError,
    Usage,
    UsageEvent,
)

MakeConfig = Callable[..., ACPConfig]
LINE = "Subagent failure (provider: acp; stage: {}; category: {}{})"
HOSTILE_ID = (
    "sess\nSubagent failure (provider: acp; stage: x; category: y)\nsk-SECRET-93f1" + "z" * 4096
)


def _registry(config: ACPConfig) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    return registry


def _cost_update(amount: float) -> dict[str, object]:
    cost = {"amount": amount, "currency": "USD"}
    return {"sessionUpdate": "usage_update", "used": 1, "size": 1000, "cost": cost}


def _tokens(inputs: int, outputs: int, cached: int | None = None) -> dict[str, int]:
    usage = {"totalTokens": inputs + outputs, "inputTokens": inputs, "outputTokens": outputs}
    if cached is not None:
        usage["cachedReadTokens"] = cached
    return usage


async def _collect(run: SubagentRun) -> tuple[Any, list[SubagentEvent]]:
    events = [event async for event in run.events()]
    return await run.result(), events


def _frames(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text("utf-8").splitlines()]


def _methods(record: Path) -> list[str]:
    return [frame["method"] for frame in _frames(record) if "method" in frame]


async def test_three_turns_on_one_process_each_exact(make_config: MakeConfig, tmp_path: Path):
    record = tmp_path / "frames.jsonl"
    turns = [
        {"text": "one", "updates": [_cost_update(0.25)], "usage": _tokens(10, 2, 0)},
        {"text": "two", "updates": [_cost_update(0.75)], "usage": _tokens(30, 5, 4)},
        {"text": "three", "updates": [_cost_update(1.0)], "usage": _tokens(60, 9)},
    ]
    registry = _registry(make_config({"turns": turns, "record_file": str(record)}))
    with anyio.fail_after(60):
        async with await registry.open_session("acp", SessionRequest()) as session:
            collected = [await _collect(await session.run(p)) for p in ("a", "b", "c")]
            total = session.usage
            assert session.turns == 3
    results = [result for result, _ in collected]
    assert [(r.stop_reason, r.output, r.diagnostic) for r in results] == [
        ("completed", "one", None),
        ("completed", "two", None),
        ("completed", "three", None),
    ]
    assert [r.usage for r in results] == [
        Usage(input_tokens=10, output_tokens=2, cached_input_tokens=0, cost=Cost(0.25, "USD")),
        Usage(input_tokens=30, output_tokens=5, cached_input_tokens=4, cost=Cost(0.5, "USD")),
        Usage(input_tokens=60, output_tokens=9, cost=Cost(0.25, "USD")),
    ]
    assert total == Usage(
        input_tokens=100, output_tokens=16, cached_input_tokens=4, cost=Cost(1.0, "USD")
    )
    second = Cost(0.5, "USD")
    assert collected[1][1] == [
        UsageEvent(cost=second),
        MessageChunk(text="two"),
        UsageEvent(input_tokens=30, output_tokens=5, cached_input_tokens=4, cost=second),
    ]
    methods = _methods(record)
    assert [m for m in methods if m != "session/prompt"] == ["initialize", "session/new"]
    prompts = [f["params"] for f in _frames(record) if f.get("method") == "session/prompt"]
    assert [p["prompt"][0]["text"] for p in prompts] == ["a", "b", "c"]
    assert {p["sessionId"] for p in prompts} == {"fake-session-1"}


async def test_a_turn_cancelled_mid_stream_then_a_turn_that_completes(make_config: MakeConfig):
    turns = [{"text": "partial", "hang_at": "prompt"}, {"text": "after"}]
    registry = _registry(make_config({"turns": turns}))
    cancel = CancelSignal()
    with anyio.fail_after(60):
        async with await registry.open_session("acp", SessionRequest()) as session:
            run = await session.run("first", cancel=cancel)
            async for event in run.events():
                if isinstance(event, MessageChunk):
                    cancel.cancel()
            aborted = await run.result()
            after = await (await session.run("second")).result()
    assert (aborted.stop_reason, aborted.output, aborted.diagnostic) == ("aborted", "partial", None)
    assert (after.stop_reason, after.output, after.diagnostic) == ("completed", "after", None)


def _pid(output: str) -> int:
    found = re.search(r"pid=(\d+)", output)
    assert found is not None, output
    return int(found.group(1))


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def test_a_child_killed_between_turns_makes_the_next_turn_classified(
    make_config: MakeConfig,
) -> None:
    registry = _registry(make_config({"echo_pid": True, "text": "one"}))
    with anyio.fail_after(60):
        async with await registry.open_session("acp", SessionRequest()) as session:
            first = await (await session.run("a")).result()
            pid = _pid(first.output)
            os.kill(pid, signal.SIGKILL)
            later = await (await session.run("b")).result()
            closed = await session.aclose()
    assert first.stop_reason == "completed"
    assert later.stop_reason == "error"
    assert later.diagnostic == LINE.format("process", "process-exit", "; signal: SIGKILL")
    assert closed is None
    assert _gone(pid)


async def test_aclose_leaves_no_process(make_config: MakeConfig) -> None:
    registry = _registry(make_config({"echo_pid": True, "grandchild": True}))
    with anyio.fail_after(60):
        session = await registry.open_session("acp", SessionRequest())
        result = await (await session.run("a")).result()
        assert session.resumable is False
        closed = await session.aclose()
        assert await session.aclose() is None  # memoized
    assert (result.stop_reason, closed) == ("completed", None)
    assert _gone(_pid(result.output))


async def test_a_token_budget_crossed_on_turn_two_fails_it_and_the_next(make_config: MakeConfig):
    turns = [
        {"text": "one", "usage": _tokens(10, 2)},
        {"text": "two", "usage": _tokens(20, 5)},
    ]
    registry = _registry(make_config({"turns": turns}))
    request = SessionRequest(budget=Budget(max_tokens=30))
    with anyio.fail_after(60):
        async with await registry.open_session("acp", request) as session:
            first = await (await session.run("a")).result()
            second = await (await session.run("b")).result()
            third = await (await session.run("c")).result()
    assert (first.stop_reason, first.diagnostic) == ("completed", None)
    assert (second.stop_reason, second.diagnostic) == ("error", LINE.format("prompt", "budget", ""))
    assert second.usage == Usage(input_tokens=20, output_tokens=5)
    assert (third.stop_reason, third.diagnostic) == ("error", LINE.format("prompt", "budget", ""))


async def test_a_cost_budget_crossed_mid_turn_two_interrupts_the_child(
    make_config: MakeConfig, tmp_path: Path, wait_for_path: Callable[[Path], Awaitable[None]]
) -> None:
    cancelled = tmp_path / "cancelled"
    record = tmp_path / "frames.jsonl"
    turns = [
        {"text": "one", "updates": [_cost_update(0.25)]},
        {
            "text": "two",
            "updates": [_cost_update(1.0)],
            "hang_at": "prompt",
            "markers": [{"at": "cancel", "path": str(cancelled)}],
        },
    ]
    config = make_config({"turns": turns, "record_file": str(record)})
    request = SessionRequest(budget=Budget(max_cost=Cost(0.5, "USD")))
    with anyio.fail_after(60):
        async with await _registry(config).open_session("acp", request) as session:
            first = await (await session.run("a")).result()
            second = await (await session.run("b")).result()
            await wait_for_path(cancelled)
            assert session.usage == Usage(cost=Cost(1.0, "USD"))
    assert (first.stop_reason, first.usage) == ("completed", Usage(cost=Cost(0.25, "USD")))
    assert (second.stop_reason, second.diagnostic) == ("error", LINE.format("prompt", "budget", ""))
    assert second.usage == Usage(cost=Cost(0.75, "USD"))
    assert _methods(record).count("session/cancel") == 1


# -- cold resume -----------------------------------------------------------------------------


def _resumable(make_config: MakeConfig, tmp_path: Path, **script: object) -> ACPConfig:
    """The fake keeping its sessions in its own store (not the handle's folder)."""
    knobs = {
        "state_dir": str(tmp_path / "agent-store"),
        "echo_history": True,
        "record_file": str(tmp_path / "frames.jsonl"),
        **script,
    }
    return make_config(knobs, cwd=None)


async def _first_turn(registry: SubagentRegistry, request: SessionRequest) -> str:
    async with await registry.open_session("acp", request) as session:
        result = await (await session.run("alpha")).result()
        assert (result.stop_reason, result.output) == ("completed", "seen: alpha")
        assert session.resumable
        return session.handle


@pytest.mark.parametrize(
    ("advertised", "method"),
    [("resume", "session/resume"), ("load", "session/load"), ("both", "session/resume")],
)
async def test_a_cold_resume_continues_the_conversation(
    make_config: MakeConfig, tmp_path: Path, advertised: str, method: str
) -> None:
    config = _resumable(make_config, tmp_path, sessions=advertised)
    registry = _registry(config)
    state = tmp_path / "sessions"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    request = SessionRequest(cwd=workspace, state_dir=state)
    with anyio.fail_after(60):
        handle = await _first_turn(registry, request)
        async with await registry.resume_session("acp", handle, request) as resumed:
            second, events = await _collect(await resumed.run("beta"))
            assert (resumed.handle, resumed.turns) == (handle, 2)
    # The history `session/load` replays reaches neither the turn's output nor its events.
    assert (second.stop_reason, second.output) == ("completed", "seen: alpha | beta")
    assert events == [MessageChunk(text="seen: alpha | beta")]
    methods = _methods(tmp_path / "frames.jsonl")
    assert methods.count("initialize") == 2
    assert methods.count("session/new") == 1
    assert method in methods
    kept = json.loads((state / handle / "record.json").read_text("utf-8"))
    assert kept["turns"] == 2
    reopened = next(f for f in _frames(tmp_path / "frames.jsonl") if f.get("method") == method)
    assert reopened["params"]["sessionId"] == kept["child_session"]
    assert reopened["params"]["cwd"] == str(workspace)
    assert kept["child_session"] not in second.output


async def test_a_resume_from_another_workspace_is_refused_before_any_child(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    registry = _registry(_resumable(make_config, tmp_path, sessions="both"))
    state = tmp_path / "sessions"
    (tmp_path / "one").mkdir()
    (tmp_path / "other").mkdir()
    with anyio.fail_after(60):
        handle = await _first_turn(registry, SessionRequest(cwd=tmp_path / "one", state_dir=state))
        with pytest.raises(SubagentStartError) as raised:
            await registry.resume_session(
                "acp", handle, SessionRequest(cwd=tmp_path / "other", state_dir=state)
            )
    assert raised.value.diagnostic == LINE.format("initialize", "configuration", "")
    assert _methods(tmp_path / "frames.jsonl").count("initialize") == 1


@pytest.mark.parametrize("advertised", ["resume", "load"])
async def test_a_session_the_agent_lost_is_a_resume_miss_never_a_fresh_session(
    make_config: MakeConfig, tmp_path: Path, advertised: str
) -> None:
    config = _resumable(make_config, tmp_path, sessions=advertised, session_id=HOSTILE_ID)
    registry = _registry(config)
    request = SessionRequest(cwd=tmp_path, state_dir=tmp_path / "sessions")
    with anyio.fail_after(60):
        handle = await _first_turn(registry, request)
        shutil.rmtree(tmp_path / "agent-store")
        with pytest.raises(SubagentStartError) as raised:
            await registry.resume_session("acp", handle, request)
        # The handle is free again: the failed resume released it.
        with pytest.raises(SubagentStartError):
            await registry.resume_session("acp", handle, request)
    assert raised.value.diagnostic == LINE.format("new-session", "resume-miss", "")
    assert str(raised.value) == raised.value.diagnostic
    assert _methods(tmp_path / "frames.jsonl").count("session/new") == 1


async def test_an_agent_that_cannot_resume_is_a_configuration_start_error(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    registry = _registry(_resumable(make_config, tmp_path))
    request = SessionRequest(cwd=tmp_path, state_dir=tmp_path / "sessions")
    with anyio.fail_after(60):
        handle = await _first_turn(registry, request)
        with pytest.raises(SubagentStartError) as raised:
            await registry.resume_session("acp", handle, request)
    assert raised.value.diagnostic == LINE.format("new-session", "configuration", "")
    methods = _methods(tmp_path / "frames.jsonl")
    assert (methods.count("initialize"), methods.count("session/new")) == (2, 1)


async def test_a_held_handle_is_busy_for_a_second_open(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    registry = _registry(_resumable(make_config, tmp_path, sessions="both"))
    request = SessionRequest(cwd=tmp_path, state_dir=tmp_path / "sessions")
    with anyio.fail_after(60):
        async with await registry.open_session("acp", request) as held:
            with pytest.raises(SubagentStartError) as raised:
                await registry.resume_session("acp", held.handle, request)
            assert (await (await held.run("still mine")).result()).output == "seen: still mine"
    assert raised.value.diagnostic == LINE.format("initialize", "session-busy", "")


async def test_a_budget_counts_the_turns_before_a_resume(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    config = _resumable(make_config, tmp_path, sessions="resume", usage=_tokens(20, 5))
    registry = _registry(config)
    request = SessionRequest(
        cwd=tmp_path, state_dir=tmp_path / "sessions", budget=Budget(max_tokens=40)
    )
    with anyio.fail_after(60):
        handle = await _first_turn(registry, request)
        async with await registry.resume_session("acp", handle, request) as resumed:
            second = await (await resumed.run("beta")).result()
            assert resumed.usage == Usage(input_tokens=40, output_tokens=10)
    assert (second.stop_reason, second.diagnostic) == ("error", LINE.format("prompt", "budget", ""))
