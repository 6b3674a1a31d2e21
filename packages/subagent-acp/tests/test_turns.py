"""Several turns on one ACP child (the lifecycle's session, driven through the protocol).

A one-shot run is a session of one turn; these check what a second turn relies on: each turn
keeps its own output, and an interrupted turn's late answer and the updates before it never
reach the turn after it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from subagent_acp import ACPConfig
from subagent_acp._run import ACPChild, new_session
from subagent_core import CancelSignal, SubagentRequest, SubagentResult
from subagent_core.kit import ChildSession

MakeConfig = Callable[..., ACPConfig]


def session_for(config: ACPConfig, cwd: Path) -> ChildSession:
    child = ACPChild(config, cwd)
    child.serve(SubagentRequest(prompt="unused", cwd=cwd))
    return new_session(config, child)


async def test_two_turns_on_one_child_keep_their_own_output(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    session = session_for(make_config({"text": "hello", "chunks": 2}), tmp_path)
    with anyio.fail_after(60):
        first = session.run_of(session.begin_turn("one"), ends_session=False)
        await session.open()
        assert await first.result() == SubagentResult(stop_reason="completed", output="hello")
        second = session.run_of(session.begin_turn("two"), ends_session=False)
        assert await second.result() == SubagentResult(stop_reason="completed", output="hello")
        assert await session.aclose() is None


async def test_an_interrupted_turns_late_answer_never_reaches_the_next_turn(
    make_config: MakeConfig, tmp_path: Path, wait_for_path: Callable[[Path], Awaitable[None]]
) -> None:
    """The first prompt is answered (with its text) only after it was cancelled and the next
    turn began: the next turn's prompt waits for that answer, and keeps only its own text."""
    gate = tmp_path / "gate"
    prompted = tmp_path / "prompted"
    script = {
        "gate_file": str(gate),
        "text": "one answer",
        "markers": [{"at": "prompt", "path": str(prompted)}],
    }
    session = session_for(make_config(script), tmp_path)
    with anyio.fail_after(60):
        cancel = CancelSignal()
        first = session.run_of(session.begin_turn("one", cancel=cancel), ends_session=False)
        await session.open()
        await wait_for_path(prompted)
        cancel.cancel()
        assert await first.result() == SubagentResult(stop_reason="aborted")
        second = session.run_of(session.begin_turn("two"), ends_session=False)
        gate.touch()
        assert await second.result() == SubagentResult(stop_reason="completed", output="one answer")
        assert await session.aclose() is None
