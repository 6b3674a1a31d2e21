"""The startup and idle deadlines over the real fake runtime.

Bounds are small (0.5 s) so each case ends quickly; the runtime's scripted silence or keep-alive
frames are the cases themselves, nothing waits on time to synchronise.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from subagent_core import SubagentRequest, SubagentResult
from subagent_core.kit import DEFAULT_IDLE_TIMEOUT_SECONDS, DEFAULT_STARTUP_TIMEOUT_SECONDS
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript

Provider = Callable[..., SDKProvider]

BOUND = 0.5


def line(stage: str, category: str) -> str:
    return f"Subagent failure (provider: dsh-sdk; stage: {stage}; category: {category})"


async def test_a_runtime_silent_after_starting_the_turn_times_out(
    provider: Provider, tmp_path: Path
) -> None:
    script = FakeScript(text="partial", deltas=2, hang_at="deltas", ignore_eof=True)
    sdk = provider(script, idle_timeout_seconds=BOUND)
    with anyio.fail_after(30):
        run = await sdk.start(SubagentRequest(prompt="p", cwd=tmp_path))
        async with run:
            started = anyio.current_time()
            result = await run.result()
            waited = anyio.current_time() - started
            assert await run.dispose() is None
    assert result == SubagentResult(
        stop_reason="error", output="partial", diagnostic=line("session-run", "timeout")
    )
    assert waited >= BOUND - 0.05


async def test_keep_alive_frames_more_often_than_the_bound_are_not_a_timeout(
    provider: Provider, tmp_path: Path
) -> None:
    # 20 frames 0.05 s apart: 1 s of turn, twice the idle bound, never silent for 0.5 s.
    script = FakeScript(text="done", keepalive={"interval_seconds": 0.05, "count": 20})
    sdk = provider(script, idle_timeout_seconds=BOUND)
    with anyio.fail_after(30):
        run = await sdk.start(SubagentRequest(prompt="p", cwd=tmp_path))
        async with run:
            result = await run.result()
            assert await run.dispose() is None
    assert result == SubagentResult(stop_reason="completed", output="done")


async def test_a_warm_runtime_is_bounded_by_the_idle_deadline_too(
    provider: Provider, tmp_path: Path
) -> None:
    script = FakeScript(text="partial", hang_at="deltas")
    sdk = provider(script, idle_timeout_seconds=BOUND, prewarm=1)
    async with sdk:
        with anyio.fail_after(30):
            await sdk.warm_up()
            run = await sdk.start(SubagentRequest(prompt="p", cwd=tmp_path))
            async with run:
                result = await run.result()
    assert result == SubagentResult(
        stop_reason="error", output="partial", diagnostic=line("session-run", "timeout")
    )


def test_deadline_defaults_and_validation(tmp_path: Path) -> None:
    config = SDKConfig(command="runtime", cwd=tmp_path)
    assert config.startup_timeout_seconds == DEFAULT_STARTUP_TIMEOUT_SECONDS == 60.0
    assert config.idle_timeout_seconds == DEFAULT_IDLE_TIMEOUT_SECONDS == 1800.0
    disabled = SDKConfig(command="runtime", startup_timeout_seconds=None, idle_timeout_seconds=None)
    assert (disabled.startup_timeout_seconds, disabled.idle_timeout_seconds) == (None, None)
    for key in ("startup_timeout_seconds", "idle_timeout_seconds"):
        for bad in (0, -1, float("inf"), float("nan"), True, "5"):
            with pytest.raises(ValueError, match=rf"^SDKConfig\.{key} must be None or a positive"):
                SDKConfig(command="runtime", **{key: bad})  # type: ignore[arg-type]
