"""Sessions: several turns on one CLI process, and a conversation continued by handle.

On the fake CLI: turns, their own output and usage, a cancel, a death between turns, the
close, the budget and the fake's `--resume`. On the real CLI (the `[cli]` extra) against the
loopback Messages stub, keyless: two live turns, a cold resume in the session's own config dir
(the stub sees turn 1's messages in turn 2's request), and each refusal of a resume.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_claude.testing import MessagesStub, text_turn
from subagent_core import (
    Budget,
    CancelSignal,
    SessionRequest,
    SubagentError,
    SubagentRegistry,
    SubagentStartError,
    Usage,
    UsageEvent,
)

MakeConfig = Callable[..., ClaudeConfig]
F = "Subagent failure (provider: claude; stage: "


def _registry(config: ClaudeConfig) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(ClaudeProvider(config))
    return registry


def _figures(usage: Usage | None) -> tuple[object, ...]:
    """Tokens in, out, cached and the cost in USD (compare the cost with `pytest.approx`)."""
    assert usage is not None
    cost = None if usage.cost is None else usage.cost.amount
    assert usage.cost is None or usage.cost.currency == "USD"
    return (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, cost)


def _tokens(input_tokens: int, output_tokens: int, cached: int) -> dict[str, object]:
    usage = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cached,
    }
    return {"result": {"usage": usage}}


# -- the fake CLI ----------------------------------------------------------------------------


async def test_three_turns_on_one_process_each_with_its_own_output_and_usage(
    fake_config: MakeConfig, process_leak_guard: list[int]
) -> None:
    turns = [
        {"text": "ONE", "cost": 0.01, **_tokens(10, 2, 1)},
        {"text": "TWO", "cost": 0.02, **_tokens(30, 3, 4)},
        {"text": "THREE", "cost": 0.03, **_tokens(50, 5, 0)},
    ]
    registry = _registry(fake_config({"turns": turns}))
    events: list[Any] = []
    with anyio.fail_after(30):
        async with await registry.open_session("claude", SessionRequest()) as session:
            first = await (await session.run("one")).result()
            run = await session.run("two")
            events = [event async for event in run.events()]
            second = await run.result()
            third = await (await session.run("three")).result()
            assert session.turns == 3
            total = session.usage
    assert len(process_leak_guard) == 1
    assert [(r.stop_reason, r.output, r.diagnostic) for r in (first, second, third)] == [
        ("completed", "ONE", None),
        ("completed", "TWO", None),
        ("completed", "THREE", None),
    ]
    assert _figures(first.usage) == (10, 2, 1, pytest.approx(0.01))
    assert _figures(second.usage) == (30, 3, 4, pytest.approx(0.02))
    assert _figures(third.usage) == (50, 5, 0, pytest.approx(0.03))
    assert _figures(total) == (90, 10, 5, pytest.approx(0.06))
    # The running tokens while the model call streams, then the turn's own figures.
    usage_events = [e for e in events if isinstance(e, UsageEvent)]
    assert [(e.input_tokens, e.output_tokens) for e in usage_events] == [(30, 1), (30, 3), (30, 3)]
    assert usage_events[-1].cost is not None
    assert usage_events[-1].cost.amount == pytest.approx(0.02)


async def test_a_turn_cancelled_mid_stream_then_the_next_completes(
    fake_config: MakeConfig, tmp_path: Path, process_leak_guard: list[int]
) -> None:
    record = tmp_path / "sent.jsonl"
    turns = [
        {"text": "partial ONE", "hang_at": "prompt", "chunks": 1, "cost": 0.5, **_tokens(7, 3, 0)},
        {"text": "TWO", "cost": 0.02, **_tokens(30, 3, 4)},
    ]
    registry = _registry(fake_config({"turns": turns, "record_file": str(record)}))
    with anyio.fail_after(30):
        async with await registry.open_session("claude", SessionRequest()) as session:
            cancel = CancelSignal()
            run = await session.run("one", cancel=cancel)
            async for event in run.events():
                # The model call has streamed its text and its counts; the CLI works on.
                if isinstance(event, UsageEvent) and event.output_tokens == 3:
                    cancel.cancel()
                    break
            cancelled = await run.result()
            after = await (await session.run("two")).result()
            total = session.usage
    assert len(process_leak_guard) == 1
    assert (cancelled.stop_reason, cancelled.output, cancelled.diagnostic) == (
        "aborted",
        "partial ONE",
        None,
    )
    assert (after.stop_reason, after.output, after.diagnostic) == ("completed", "TWO", None)
    # The cancelled turn counts what it saw stream; the cost its late `result` added is
    # counted with the turn that read it, so the session's cost is the CLI's total.
    assert _figures(cancelled.usage) == (7, 3, 0, None)
    assert _figures(after.usage) == (30, 3, 4, pytest.approx(0.52))
    assert _figures(total) == (37, 6, 4, pytest.approx(0.52))
    sent = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    kinds = [(f["type"], f.get("request", {}).get("subtype")) for f in sent]
    assert kinds == [
        ("control_request", "initialize"),
        ("user", None),
        ("control_request", "interrupt"),
        ("user", None),
    ]


async def test_the_child_killed_between_turns_settles_the_next_turn_classified(
    fake_config: MakeConfig, process_leak_guard: list[int]
) -> None:
    registry = _registry(fake_config())
    with anyio.fail_after(30):
        session = await registry.open_session("claude", SessionRequest())
        async with session:
            first = await (await session.run("one")).result()
            (leader,) = process_leak_guard
            os.kill(leader, signal.SIGKILL)
            later = await (await session.run("two")).result()
            closed = await session.aclose()
    assert first.stop_reason == "completed"
    assert (later.stop_reason, later.output) == ("error", "")
    assert later.diagnostic == F + "process; category: process-exit; signal: SIGKILL)"
    assert closed is None


async def test_aclose_ends_the_child_and_its_escapees(
    fake_config: MakeConfig, tmp_path: Path
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    registry = _registry(fake_config({"grandchild": "setsid", "pid_file": str(pid_file)}))
    with anyio.fail_after(30):
        session = await registry.open_session("claude", SessionRequest())
        result = await (await session.run("one")).result()
        assert await session.aclose() is None
        with pytest.raises(SubagentError) as closed:
            await session.run("two")
    assert result.stop_reason == "completed"
    assert closed.value.code == "SESSION_CLOSED"
    pid = int(pid_file.read_text(encoding="utf-8"))
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


async def test_a_budget_crossed_on_turn_two_interrupts_it(
    fake_config: MakeConfig, tmp_path: Path
) -> None:
    record = tmp_path / "sent.jsonl"
    # Turn 2's model call reports 100 input tokens as it starts; the CLI then keeps working.
    turns = [_tokens(10, 2, 0), {"hang_at": "prompt", **_tokens(100, 5, 0)}]
    registry = _registry(fake_config({"turns": turns, "record_file": str(record)}))
    request = SessionRequest(budget=Budget(max_tokens=50))
    with anyio.fail_after(30):
        async with await registry.open_session("claude", request) as session:
            first = await (await session.run("one")).result()
            async with await session.run("two") as run:  # leaving waits for its interrupt
                second = await run.result()
            third = await (await session.run("three")).result()  # spent: the child is not asked
            total = session.usage
    budget = ("error", F + "prompt; category: budget)")
    assert first.stop_reason == "completed"
    assert (second.stop_reason, second.diagnostic) == budget
    assert (third.stop_reason, third.diagnostic) == budget
    assert total is not None
    assert (total.input_tokens, total.output_tokens) == (110, 3)  # what crossed is counted
    sent = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    kinds = [f.get("request", {}).get("subtype", f["type"]) for f in sent]
    assert kinds == ["initialize", "user", "user", "interrupt"]


async def test_an_output_schema_in_a_session_turn_is_refused_before_it_is_sent(
    fake_config: MakeConfig, tmp_path: Path
) -> None:
    record = tmp_path / "sent.jsonl"
    registry = _registry(fake_config({"record_file": str(record)}))
    with anyio.fail_after(30):
        async with await registry.open_session("claude", SessionRequest()) as session:
            with pytest.raises(SubagentError) as refused:
                await session.run("one", output_schema={"type": "object"})
            after = await (await session.run("two")).result()
            turns = session.turns
    assert refused.value.code == "UNSUPPORTED_CAPABILITY"
    assert (after.stop_reason, turns) == ("completed", 1)
    sent = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert [f["type"] for f in sent] == ["control_request", "user"]


async def test_the_fake_resumes_its_kept_conversation_and_its_cost(
    fake_config: MakeConfig, tmp_path: Path
) -> None:
    # Each turn costs 0.01; the resumed CLI restores the running total (0.01), so its turn's
    # `total_cost_usd` is 0.02, of which the turn's own part is 0.01.
    registry = _registry(fake_config({"transcripts": True, "cost": 0.01}))
    request = SessionRequest(state_dir=tmp_path / "sessions")
    with anyio.fail_after(30):
        async with await registry.open_session("claude", request) as session:
            first = await (await session.run("one")).result()
        async with await registry.resume_session("claude", session.handle, request) as resumed:
            again = await (await resumed.run("two")).result()
            total = resumed.usage
    assert (first.stop_reason, again.stop_reason) == ("completed", "completed")
    assert _figures(again.usage)[3] == pytest.approx(0.01)
    assert _figures(total)[3] == pytest.approx(0.02)
    projects = tmp_path / "sessions" / session.handle / "child" / "projects"
    (kept,) = projects.glob("*/*.jsonl")
    lines = [json.loads(line) for line in kept.read_text(encoding="utf-8").splitlines()]
    assert [e["type"] for e in lines] == ["user", "cost-state", "user", "cost-state"]


@pytest.mark.parametrize("session_id", ["bad\nid SECRET-7", "x" * 100_000, "--evil-option"])
async def test_a_session_id_not_fit_to_resume_is_never_kept_nor_shown(
    fake_config: MakeConfig, tmp_path: Path, session_id: str
) -> None:
    registry = _registry(fake_config({"session_id": session_id}))
    request = SessionRequest(state_dir=tmp_path / "sessions")
    with anyio.fail_after(30):
        async with await registry.open_session("claude", request) as session:
            result = await (await session.run("one")).result()
        with pytest.raises(SubagentStartError) as missed:
            await registry.resume_session("claude", session.handle, request)
    assert result.stop_reason == "completed"
    assert missed.value.diagnostic == F + "initialize; category: resume-miss)"
    assert session_id not in str(missed.value)
    record = (tmp_path / "sessions" / session.handle / "record.json").read_text(encoding="utf-8")
    assert json.loads(record)["child_session"] is None


async def test_a_recorded_session_id_that_is_no_plain_token_is_never_passed_on(
    fake_config: MakeConfig, tmp_path: Path, process_leak_guard: list[int]
) -> None:
    registry = _registry(fake_config({"transcripts": True}))
    request = SessionRequest(state_dir=tmp_path / "sessions")
    with anyio.fail_after(30):
        async with await registry.open_session("claude", request) as session:
            await (await session.run("one")).result()
        path = tmp_path / "sessions" / session.handle / "record.json"
        record = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(
            json.dumps({**record, "child_session": "--dangerously-skip-permissions"}),
            encoding="utf-8",
        )
        with pytest.raises(SubagentStartError) as missed:
            await registry.resume_session("claude", session.handle, request)
    assert missed.value.diagnostic == F + "initialize; category: resume-miss)"
    assert len(process_leak_guard) == 1  # refused before any spawn


async def test_the_fake_without_the_conversation_is_a_resume_miss(
    fake_config: MakeConfig, tmp_path: Path
) -> None:
    registry = _registry(fake_config({"transcripts": True}))
    request = SessionRequest(state_dir=tmp_path / "sessions")
    with anyio.fail_after(30):
        async with await registry.open_session("claude", request) as session:
            await (await session.run("one")).result()
        shutil.rmtree(tmp_path / "sessions" / session.handle / "child" / "projects")
        with pytest.raises(SubagentStartError) as missed:
            await registry.resume_session("claude", session.handle, request)
    assert missed.value.diagnostic == F + "initialize; category: resume-miss)"


# -- the real CLI against the loopback stub --------------------------------------------------

RealConfig = Callable[..., ClaudeConfig]

# The CLI's price for the stub's counts (per token: input 4e-6, output 2e-5, cache read 2e-7).
ONE_COST = 10 * 4e-6 + 2 * 2e-5 + 1 * 2e-7
TWO_COST = 30 * 4e-6 + 3 * 2e-5 + 4 * 2e-7


def _stub() -> MessagesStub:
    return MessagesStub(
        [
            text_turn("ONE", input_tokens=10, output_tokens=2, cache_read_input_tokens=1),
            text_turn("TWO", input_tokens=30, output_tokens=3, cache_read_input_tokens=4),
        ]
    )


def _sent(stub: MessagesStub) -> str:
    """The conversation the CLI sent in its latest model request."""
    return json.dumps(stub.model_requests[-1].body.get("messages"))


async def _first_turn(registry: SubagentRegistry, request: SessionRequest) -> str:
    async with await registry.open_session("claude", request) as session:
        result = await (await session.run("remember the word alpha")).result()
        assert (result.stop_reason, result.output) == ("completed", "ONE")
        return session.handle


async def test_real_two_turns_live_on_one_process(
    real_config: RealConfig, process_leak_guard: list[int]
) -> None:
    with _stub() as stub:
        registry = _registry(real_config(stub))
        with anyio.fail_after(90):
            async with await registry.open_session("claude", SessionRequest()) as session:
                first = await (await session.run("first prompt alpha")).result()
                second = await (await session.run("second prompt beta")).result()
                total = session.usage
        sent = _sent(stub)
    assert len(process_leak_guard) == 1
    assert [(r.stop_reason, r.output) for r in (first, second)] == [
        ("completed", "ONE"),
        ("completed", "TWO"),
    ]
    # `usage` is the turn's own; `total_cost_usd` is the CLI's running total.
    assert _figures(first.usage) == (10, 2, 1, pytest.approx(ONE_COST))
    assert _figures(second.usage) == (30, 3, 4, pytest.approx(TWO_COST))
    assert _figures(total) == (40, 5, 5, pytest.approx(ONE_COST + TWO_COST))
    assert "first prompt alpha" in sent
    assert "second prompt beta" in sent
    assert not session.resumable


async def test_real_cold_resume_continues_the_conversation(
    real_config: RealConfig, tmp_path: Path
) -> None:
    state = tmp_path / "sessions"
    request = SessionRequest(state_dir=state)
    with _stub() as stub:
        registry = _registry(real_config(stub))
        with anyio.fail_after(90):
            handle = await _first_turn(registry, request)
            async with await registry.resume_session("claude", handle, request) as resumed:
                again = await (await resumed.run("which word?")).result()
                turns, total = resumed.turns, resumed.usage
        sent = _sent(stub)
    assert (again.stop_reason, again.output) == ("completed", "TWO")
    assert "remember the word alpha" in sent
    assert '"ONE"' in sent
    assert turns == 2
    # The resumed CLI restored its running cost; the turn reports only what it added.
    assert _figures(again.usage) == (30, 3, 4, pytest.approx(TWO_COST))
    assert _figures(total) == (40, 5, 5, pytest.approx(ONE_COST + TWO_COST))
    folder = state / handle
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "record.json").stat().st_mode & 0o777 == 0o600
    assert list((folder / "child" / "projects").glob("*/*.jsonl"))
    assert not (folder / "child" / ".credentials.json").exists()


async def test_real_resume_from_another_workspace_is_refused(
    real_config: RealConfig, tmp_path: Path
) -> None:
    state = tmp_path / "sessions"
    other = tmp_path / "elsewhere"
    other.mkdir()
    with _stub() as stub:
        registry = _registry(real_config(stub, cwd=None))
        workspace = tmp_path / "workspace"
        with anyio.fail_after(90):
            handle = await _first_turn(registry, SessionRequest(cwd=workspace, state_dir=state))
            with pytest.raises(SubagentStartError) as refused:
                await registry.resume_session(
                    "claude", handle, SessionRequest(cwd=other, state_dir=state)
                )
        requests = len(stub.model_requests)
    assert refused.value.diagnostic == F + "initialize; category: configuration)"
    assert requests == 1


async def test_real_lost_transcript_is_a_resume_miss_never_a_fresh_start(
    real_config: RealConfig, tmp_path: Path
) -> None:
    state = tmp_path / "sessions"
    request = SessionRequest(state_dir=state)
    with _stub() as stub:
        registry = _registry(real_config(stub))
        with anyio.fail_after(90):
            handle = await _first_turn(registry, request)
            for kept in (state / handle / "child" / "projects").glob("*/*.jsonl"):
                kept.unlink()
            with pytest.raises(SubagentStartError) as missed:
                await registry.resume_session("claude", handle, request)
        requests = len(stub.model_requests)
    assert missed.value.diagnostic == F + "initialize; category: resume-miss)"
    assert requests == 1


async def test_real_held_handle_is_busy_for_a_second_open(
    real_config: RealConfig, tmp_path: Path
) -> None:
    request = SessionRequest(state_dir=tmp_path / "sessions")
    with _stub() as stub:
        registry = _registry(real_config(stub))
        with anyio.fail_after(90):
            async with await registry.open_session("claude", request) as held:
                with pytest.raises(SubagentStartError) as busy:
                    await registry.resume_session("claude", held.handle, request)
    assert busy.value.diagnostic == F + "initialize; category: session-busy)"


async def test_real_session_config_dir_keeps_the_users_login_and_settings_in_place(
    real_config: RealConfig, tmp_path: Path
) -> None:
    """The session's own config dir holds its transcripts; the CLI still reads the user's
    login where the user keeps it (never linked or copied) and the user's settings (linked)."""
    user = tmp_path / "home" / ".claude"
    user.mkdir(parents=True)
    login = {"accessToken": "sk-ant-oat01-dummy-login", "refreshToken": "sk-ant-ort01-dummy"}
    login |= {"expiresAt": 4_102_444_800_000, "scopes": ["user:inference"]}
    (user / ".credentials.json").write_text(json.dumps({"claudeAiOauth": login}), encoding="utf-8")
    (user / ".credentials.json").chmod(0o600)
    (user / "settings.json").write_text(
        json.dumps({"model": "claude-settings-probe"}), encoding="utf-8"
    )
    state = tmp_path / "sessions"
    with _stub() as stub:
        config = real_config(stub, key=None, read_user_settings=True)
        registry = _registry(config)
        with anyio.fail_after(90):
            handle = await _first_turn(registry, SessionRequest(state_dir=state))
        (model_request,) = stub.model_requests
    assert model_request.headers.get("authorization") == "Bearer sk-ant-oat01-dummy-login"
    assert model_request.body.get("model") == "claude-settings-probe"
    own = state / handle / "child"
    assert (own / "settings.json").is_symlink()
    assert not (own / ".credentials.json").exists()
    assert list((own / "projects").glob("*/*.jsonl"))
