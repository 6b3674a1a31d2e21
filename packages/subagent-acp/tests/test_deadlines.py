"""The startup and idle deadlines, over real stdio with the fake child.

Bounds are small (0.5 s) so each case ends quickly; nothing waits on time to synchronise: the
child's scripted silence or keep-alive frames are the cases themselves.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import (
    PermissionAsk,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
)
from subagent_core.kit import DEFAULT_IDLE_TIMEOUT_SECONDS, DEFAULT_STARTUP_TIMEOUT_SECONDS

BOUND = 0.5
# The rollback after expiry: the ladder's graces (conftest) plus a loaded machine's slack.
ROLLBACK = 0.5 + 0.5 + 1.0 + 5.0


async def start_error(config: ACPConfig) -> tuple[SubagentStartError, float]:
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    started = anyio.current_time()
    with anyio.fail_after(30), pytest.raises(SubagentStartError) as caught:
        await registry.start("acp", SubagentRequest(prompt="go"))
    return caught.value, anyio.current_time() - started


@pytest.mark.parametrize(
    ("point", "stage"), [("initialize", "initialize"), ("new_session", "new-session")]
)
async def test_a_child_that_never_answers_the_handshake_times_out(
    make_config, point: str, stage: str
) -> None:
    config = make_config({"hang_at": point}, startup_timeout_seconds=BOUND)
    error, elapsed = await start_error(config)
    line = f"Subagent failure (provider: acp; stage: {stage}; category: timeout)"
    assert error.diagnostic == line
    assert line in str(error)
    assert BOUND <= elapsed < BOUND + ROLLBACK
    # Nothing left: the autouse process_leak_guard fails the test otherwise.


async def test_a_child_silent_after_starting_the_turn_times_out(
    make_config, tmp_path: Path
) -> None:
    cancel_seen = tmp_path / "cancel-seen"
    script = {
        "text": "partial",
        "hang_at": "prompt",
        "markers": {"at": "cancel", "path": str(cancel_seen)},
    }
    config = make_config(script, idle_timeout_seconds=BOUND)
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    with anyio.fail_after(30):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        async with run:
            started = anyio.current_time()
            result = await run.result()
            waited = anyio.current_time() - started
            assert await run.dispose() is None
    assert result == SubagentResult(
        stop_reason="error",
        output="partial",
        diagnostic="Subagent failure (provider: acp; stage: prompt; category: timeout)",
    )
    assert waited >= BOUND - 0.05
    assert cancel_seen.exists()  # the provider's cancel message reached the child


async def test_a_child_deaf_to_cancel_after_the_idle_bound_is_still_torn_down(
    make_config,
) -> None:
    script = {"text": "partial", "hang_at": "prompt", "ignore_cancel": True, "ignore_eof": True}
    config = make_config(script, idle_timeout_seconds=BOUND)
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    with anyio.fail_after(30):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        async with run:
            result = await run.result()
    assert (result.stop_reason, result.output) == ("error", "partial")
    assert result.diagnostic == "Subagent failure (provider: acp; stage: prompt; category: timeout)"


async def test_keep_alive_frames_more_often_than_the_bound_are_not_a_timeout(
    make_config, run_once
) -> None:
    # 20 frames 0.05 s apart: 1 s of turn, twice the idle bound, never silent for 0.5 s.
    script = {"text": "done", "keepalive": {"interval_seconds": 0.05, "count": 20}}
    config = make_config(script, idle_timeout_seconds=BOUND, startup_timeout_seconds=BOUND * 20)
    result, disposed = await run_once(config)
    assert result == SubagentResult(stop_reason="completed", output="done")
    assert disposed is None


async def test_disabled_deadlines_never_expire(make_config, run_once) -> None:
    config = make_config({"text": "ok"}, idle_timeout_seconds=None, startup_timeout_seconds=None)
    result, _ = await run_once(config)
    assert result == SubagentResult(stop_reason="completed", output="ok")


def test_deadline_defaults_and_validation(make_config) -> None:
    config = make_config()
    assert config.startup_timeout_seconds == DEFAULT_STARTUP_TIMEOUT_SECONDS == 60.0
    assert config.idle_timeout_seconds == DEFAULT_IDLE_TIMEOUT_SECONDS == 1800.0
    assert make_config(idle_timeout_seconds=2).idle_timeout_seconds == 2.0
    for key in ("startup_timeout_seconds", "idle_timeout_seconds"):
        for bad in (0, -1, float("inf"), float("nan"), True, "5"):
            with pytest.raises(ValueError, match=rf"^ACPConfig\.{key} must be None or a positive"):
                make_config(**{key: bad})


async def test_a_host_callback_slower_than_the_bound_is_not_the_childs_silence(
    make_config, run_once
) -> None:
    # The child waits on the parent's answer for four bounds (a human deciding): that silence
    # is the parent's, so the run completes; the bound restarts from the answer.
    async def slow_human(question: PermissionAsk) -> str | None:
        await anyio.sleep(BOUND * 4)
        return "allow_once"

    script = {"permission": {"tool_kind": "edit"}}
    config = make_config(script, idle_timeout_seconds=BOUND, permission=slow_human)
    result, disposed = await run_once(config)
    assert result == SubagentResult(stop_reason="completed", output="[permission selected allow]")
    assert disposed is None


async def test_a_terminal_command_longer_than_the_bound_is_not_the_childs_silence(
    make_config, run_once
) -> None:
    # The child waits on `terminal/wait_for_exit` while the parent runs its command for four
    # bounds: the deadline is paused for the wait.
    code = f"import time; time.sleep({BOUND * 4})"
    script = {"terminal": {"command": sys.executable, "args": ["-c", code], "wait": True}}
    config = make_config(script, idle_timeout_seconds=BOUND, terminal=True, permission="allow")
    result, disposed = await run_once(config)
    assert (result.stop_reason, result.output.startswith("[terminal -> created][exit -> 0 ")) == (
        "completed",
        True,
    )
    assert disposed is None
