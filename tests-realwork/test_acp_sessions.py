"""A real npm ACP agent continues a conversation in a fresh process, keyless against the stub.

opencode advertises `loadSession` and `sessionCapabilities.resume` (the provider takes
`session/resume`) and keeps its sessions in its own store under the throwaway home
(`XDG_DATA_HOME/opencode`): turn 1 in one child, that child closed; turn 2 in a fresh child by
handle, and the stub sees turn 1's prompt in turn 2's request. With the agent's store deleted
the same resume is a `resume-miss`, never a fresh session.

gemini (loadSession only) is not the agent here: its `session/load` opens a new chat file for
the session named by the minute and the id's prefix, so a resume within the same minute as the
first turn overwrites that turn's record and answers "No previous sessions found"; a test
cannot wait a minute.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import (
    MessageChunk,
    SessionRequest,
    SubagentRegistry,
    SubagentStartError,
    Usage,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

RUN_SECONDS = 240
WORD = "alpha-7731"
PRESET = "opencode"


def _registry(agent: Any) -> SubagentRegistry:
    """opencode as its preset runs it (`opencode acp`), in the agent's environment."""
    program = shutil.which("opencode", path=agent.env["PATH"])
    assert program is not None
    config = ACPConfig(
        command=program,
        args=("acp",),
        env={**agent.env, "OPENCODE_DISABLE_AUTOUPDATE": "true"},
        dispose_eof_grace_seconds=0.5,
        dispose_grace_seconds=0.5,
        dispose_kill_grace_seconds=1.0,
    )
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    return registry


async def _first_turn(registry: SubagentRegistry, request: SessionRequest) -> str:
    async with await registry.open_session("acp", request) as session:
        result = await (await session.run(f"Remember the word {WORD}.")).result()
        assert (result.stop_reason, result.output, result.diagnostic) == ("completed", "ONE", None)
        return session.handle


@pytest.mark.parametrize("agent", [PRESET], indirect=True)
async def test_a_real_agent_resumes_a_conversation_in_a_fresh_process(
    agent: Any, stub: Any, figure: Any, tmp_path: Path
) -> None:
    registry = _registry(agent)
    request = SessionRequest(cwd=agent.workspace, state_dir=tmp_path / "sessions")
    stub.script(text="ONE")
    with anyio.fail_after(RUN_SECONDS):
        handle = await _first_turn(registry, request)
        stub.script(text="TWO", expect=WORD)  # the log restarts: turn 2's requests only
        started = time.monotonic()
        async with await registry.resume_session("acp", handle, request) as resumed:
            run = await resumed.run("Which word was it?")
            events = [event async for event in run.events()]
            second = await run.result()
            total = resumed.usage
            assert resumed.turns == 2
        seconds = time.monotonic() - started
    assert (second.stop_reason, second.output, second.diagnostic) == ("completed", "TWO", None)
    assert [e.text for e in events if isinstance(e, MessageChunk)] == ["TWO"]
    turns = [entry for entry in stub.log() if entry["tools"]]
    assert turns
    assert all(entry["expected"] for entry in turns), stub.log()
    # opencode reports each turn's own tokens (the stub's fixed usage per request), and the
    # session adds them up over both processes.
    assert second.usage is not None
    assert second.usage.input_tokens is not None
    assert total == Usage(
        input_tokens=2 * second.usage.input_tokens,
        output_tokens=2 * (second.usage.output_tokens or 0),
    )
    record = json.loads((tmp_path / "sessions" / handle / "record.json").read_text("utf-8"))
    assert record["child_session"] not in second.output
    figure(agent.preset, "cold resume (session/resume)", f"turn 2 answered, {seconds:.1f} s")


@pytest.mark.parametrize("agent", [PRESET], indirect=True)
async def test_a_real_agent_that_lost_the_session_is_a_resume_miss(
    agent: Any, stub: Any, tmp_path: Path
) -> None:
    registry = _registry(agent)
    request = SessionRequest(cwd=agent.workspace, state_dir=tmp_path / "sessions")
    stub.script(text="ONE")
    with anyio.fail_after(RUN_SECONDS):
        handle = await _first_turn(registry, request)
        shutil.rmtree(Path(agent.env["XDG_DATA_HOME"]) / "opencode")
        stub.script(text="TWO")
        with pytest.raises(SubagentStartError) as raised:
            await registry.resume_session("acp", handle, request)
    assert raised.value.diagnostic == (
        "Subagent failure (provider: acp; stage: new-session; category: resume-miss)"
    )
    assert stub.log() == []
