"""Several turns on one SDK runtime, through the kit's `ChildSession` and the provider's hooks:
each turn a `session/prompt` on the child's one session, an interrupted turn's late end never
settling the next, a runtime lost between turns classified, nothing left."""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from subagent_core import CancelSignal, SubagentResult
from subagent_core.kit import ChildSession
from subagent_core.testing import poll_until
from subagent_sdk import SDKProvider
from subagent_sdk._run import SDKChild
from subagent_sdk.testing import FakeScript

Provider = Callable[..., SDKProvider]


def session_of(sdk: SDKProvider, workspace: Path) -> ChildSession:
    return sdk.new_session(SDKChild(sdk.config, workspace))


async def test_three_turns_prompt_one_session_of_one_runtime(
    provider: Provider, tmp_path: Path
) -> None:
    session = session_of(provider(FakeScript(echo_identity=True)), tmp_path)
    results: list[SubagentResult] = []
    with anyio.fail_after(30):
        first = session.begin_turn("one")
        await session.open()
        results.append(await session.run_of(first, ends_session=False).result())
        for prompt in ("two", "three"):
            run = session.run_of(session.begin_turn(prompt), ends_session=False)
            results.append(await run.result())
        assert await session.aclose() is None
    # The same runtime answered all three, and it saw one session only.
    identity = results[0].output
    assert re.fullmatch(r"pid=\d+ sessions=1", identity)
    assert results == [SubagentResult(stop_reason="completed", output=identity)] * 3


async def test_a_turn_cancelled_mid_stream_leaves_the_runtime_usable(
    provider: Provider, tmp_path: Path
) -> None:
    """The wire has no cancel: the runtime runs the first turn out once released, and its late
    turn end and idle status arrive while the second turn listens; they settle nothing."""
    ready, go = tmp_path / "ready", tmp_path / "go"
    script = FakeScript(
        text="answer", deltas=2, hang_at="deltas", ready_file=str(ready), go_file=str(go)
    )
    session = session_of(provider(script), tmp_path)
    cancel = CancelSignal()
    with anyio.fail_after(30):
        first = session.begin_turn("one", cancel=cancel)
        await session.open()
        await poll_until(ready.exists)
        cancel.cancel()
        aborted = await session.run_of(first, ends_session=False).result()
        second = session.run_of(session.begin_turn("two"), ends_session=False)
        go.write_text("go", encoding="utf-8")
        completed = await second.result()
        assert await session.aclose() is None
    assert aborted == SubagentResult(stop_reason="aborted", output="answer")
    assert completed == SubagentResult(stop_reason="completed", output="answer")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_a_runtime_killed_between_turns_makes_the_next_turn_a_classified_failure(
    provider: Provider, tmp_path: Path
) -> None:
    session = session_of(provider(FakeScript(echo_identity=True)), tmp_path)
    with anyio.fail_after(30):
        first = session.begin_turn("one")
        await session.open()
        answer = await session.run_of(first, ends_session=False).result()
        os.kill(int(answer.output.split()[0].removeprefix("pid=")), signal.SIGKILL)
        lost = await session.run_of(session.begin_turn("two"), ends_session=False).result()
        assert await session.aclose() is None
    assert lost == SubagentResult(
        stop_reason="error",
        output="",
        diagnostic=(
            "Subagent failure (provider: dsh-sdk; stage: session-run; category: transport; "
            "signal: SIGKILL)"
        ),
    )
