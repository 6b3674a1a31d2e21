"""Sessions on the fake runtime through the registry: several turns on one runtime process.

Each turn is a `session/prompt` on the runtime's one session. The wire has no cancel, so a
turn given up early runs out in the runtime and the next prompt waits behind it; the next
turn still keeps only its own output. The wire reports no usage, so turns carry none and a
budget has nothing to count; and there is no cold resume (the wire cannot load a session).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import psutil
import pytest
from subagent_core import (
    Budget,
    CancelSignal,
    MessageChunk,
    SessionRequest,
    SubagentError,
    SubagentEvent,
    SubagentRegistry,
    SubagentResult,
)
from subagent_core.testing import poll_until
from subagent_sdk import SDKProvider
from subagent_sdk.testing import FakeScript

Provider = Callable[..., SDKProvider]

NAME = "dsh-sdk"


def _registry(sdk: SDKProvider) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(sdk)
    return registry


def _initializes(record: Path) -> int:
    """How many runtimes answered `initialize` (one line each)."""
    if not record.exists():
        return 0
    return len(record.read_text(encoding="utf-8").splitlines())


async def test_three_turns_on_one_runtime_each_keep_their_own_output(
    provider: Provider, tmp_path: Path
) -> None:
    record = tmp_path / "initialize.jsonl"
    registry = _registry(provider(FakeScript(echo_prompt=True, record_initialize=str(record))))
    results: list[SubagentResult] = []
    events: list[list[SubagentEvent]] = []
    with anyio.fail_after(30):
        async with await registry.open_session(NAME, SessionRequest(cwd=tmp_path)) as session:
            for prompt in ("one", "two", "three"):
                async with await session.run(prompt) as run:
                    events.append([event async for event in run.events()])
                    results.append(await run.result())
            assert (session.turns, session.usage, session.resumable) == (3, None, False)
    assert results == [
        SubagentResult(stop_reason="completed", output=prompt) for prompt in ("one", "two", "three")
    ]
    assert events == [[MessageChunk(text=prompt)] for prompt in ("one", "two", "three")]
    assert _initializes(record) == 1
    assert json.loads(record.read_text(encoding="utf-8"))["cwd"] == str(tmp_path)


async def test_a_turn_cancelled_mid_stream_then_the_next_keeps_only_its_own_output(
    provider: Provider, tmp_path: Path
) -> None:
    """The first turn is given up mid-stream; released only once the second turn's prompt is
    out, the runtime runs it out (its final message, turn end and idle) while the second turn
    listens, and only then answers the second prompt."""
    ready, go = tmp_path / "ready", tmp_path / "go"
    script = FakeScript(echo_prompt=True, hang_at="deltas", ready_file=str(ready), go_file=str(go))
    registry = _registry(provider(script))
    cancel = CancelSignal()
    with anyio.fail_after(30):
        async with await registry.open_session(NAME, SessionRequest(cwd=tmp_path)) as session:
            first = await session.run("first", cancel=cancel)
            await poll_until(ready.exists)
            with pytest.raises(SubagentError) as busy:
                await session.run("too soon")
            cancel.cancel()
            aborted = await first.result()
            second = await session.run("second")
            await anyio.wait_all_tasks_blocked()  # the second prompt is written and waiting
            go.write_text("go", encoding="utf-8")
            completed = await second.result()
            third = await (await session.run("third")).result()
            assert session.turns == 3
    assert busy.value.code == "TURN_IN_PROGRESS"
    assert aborted == SubagentResult(stop_reason="aborted", output="first")
    assert completed == SubagentResult(stop_reason="completed", output="second")
    assert third == SubagentResult(stop_reason="completed", output="third")


async def test_a_session_may_take_a_warm_runtime(
    provider: Provider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="subagent_sdk")
    sdk = provider(FakeScript(echo_prompt=True), prewarm=1)
    registry = _registry(sdk)
    with anyio.fail_after(30):
        async with registry:
            await sdk.warm_up()
            async with await registry.open_session(NAME, SessionRequest(cwd=tmp_path)) as session:
                first = await (await session.run("one")).result()
                second = await (await session.run("two")).result()
    assert (first.output, second.output) == ("one", "two")
    assert sdk.warm_count == 0
    warm = [r for r in caplog.records if r.getMessage() == "an SDK run starts on a warm runtime"]
    assert len(warm) == 1


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_a_runtime_killed_between_turns_settles_the_next_turn_classified(
    provider: Provider, tmp_path: Path
) -> None:
    registry = _registry(provider(FakeScript(echo_identity=True)))
    with anyio.fail_after(30):
        session = await registry.open_session(NAME, SessionRequest(cwd=tmp_path))
        async with session:
            answer = await (await session.run("one")).result()
            pid = int(answer.output.split()[0].removeprefix("pid="))
            os.kill(pid, signal.SIGKILL)
            async with await session.run("two") as run:
                lost = await run.result()
        assert await session.aclose() is None
    assert not psutil.pid_exists(pid)
    assert lost == SubagentResult(
        stop_reason="error",
        diagnostic=(
            "Subagent failure (provider: dsh-sdk; stage: session-run; category: transport; "
            "signal: SIGKILL)"
        ),
    )


async def test_aclose_ends_the_runtime_and_the_session(provider: Provider, tmp_path: Path) -> None:
    registry = _registry(provider(FakeScript(echo_identity=True)))
    with anyio.fail_after(30):
        session = await registry.open_session(NAME, SessionRequest(cwd=tmp_path))
        answer = await (await session.run("one")).result()
        pid = int(answer.output.split()[0].removeprefix("pid="))
        assert await session.aclose() is None
        assert await session.aclose() is None
        with pytest.raises(SubagentError) as closed:
            await session.run("two")
    assert closed.value.code == "SESSION_CLOSED"
    assert not psutil.pid_exists(pid)


async def test_a_budget_has_no_reported_usage_to_count(provider: Provider, tmp_path: Path) -> None:
    """The SDK wire carries no token counts or cost, so none is guessed: every turn runs."""
    registry = _registry(provider(FakeScript(echo_prompt=True)))
    request = SessionRequest(cwd=tmp_path, budget=Budget(max_tokens=1))
    with anyio.fail_after(30):
        async with await registry.open_session(NAME, request) as session:
            first = await (await session.run("one")).result()
            second = await (await session.run("two")).result()
            assert session.usage is None
    assert (first.stop_reason, first.usage) == ("completed", None)
    assert (second.stop_reason, second.usage) == ("completed", None)


async def test_resume_is_refused_before_any_runtime_starts(
    provider: Provider, tmp_path: Path
) -> None:
    record = tmp_path / "initialize.jsonl"
    sdk = provider(FakeScript(record_initialize=str(record)))
    assert (sdk.capabilities.sessions, sdk.capabilities.resume) == (True, False)
    registry = _registry(sdk)
    request = SessionRequest(cwd=tmp_path, state_dir=tmp_path / "state")
    with pytest.raises(SubagentError) as refused:
        await registry.resume_session(NAME, "s0123", request)
    assert refused.value.code == "UNSUPPORTED_CAPABILITY"
    assert _initializes(record) == 0


async def test_a_cancelled_session_request_starts_nothing(
    provider: Provider, tmp_path: Path
) -> None:
    record = tmp_path / "initialize.jsonl"
    registry = _registry(provider(FakeScript(record_initialize=str(record))))
    cancel = CancelSignal()
    cancel.cancel()
    with pytest.raises(SubagentError) as aborted:
        await registry.open_session(NAME, SessionRequest(cwd=tmp_path, cancel=cancel))
    assert str(aborted.value) == "subagent request was aborted before the SDK child started"
    assert _initializes(record) == 0
