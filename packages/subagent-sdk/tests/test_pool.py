"""Pre-spawned fresh runtimes (`prewarm`): one run each, never a dead one, nothing left."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import psutil
import pytest
from subagent_core import SubagentRegistry, SubagentRequest, SubagentResult, SubagentStartError
from subagent_core.testing import poll_until
from subagent_sdk import SDKProvider
from subagent_sdk.testing import FakeScript

Provider = Callable[..., SDKProvider]


def runtime_pids() -> set[int]:
    """Fake runtimes alive below this process (zombies count as gone)."""
    pids: set[int] = set()
    for process in psutil.Process().children(recursive=True):
        try:
            if process.status() != psutil.STATUS_ZOMBIE and "subagent_sdk.testing" in " ".join(
                process.cmdline()
            ):
                pids.add(process.pid)
        except psutil.Error:
            continue
    return pids


class _Peak:
    def __init__(self) -> None:
        self.runtimes = 0


@asynccontextmanager
async def peak_runtimes() -> AsyncIterator[_Peak]:
    """Samples the number of live fake runtimes every 20 ms (a bound, not a synchronisation)."""
    peak = _Peak()

    async def sample() -> None:
        while True:
            peak.runtimes = max(peak.runtimes, len(runtime_pids()))
            await anyio.sleep(0.02)

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(sample)
        try:
            yield peak
        finally:
            task_group.cancel_scope.cancel()


async def _run(sdk: SDKProvider, cwd: Path) -> SubagentResult:
    run = await sdk.start(SubagentRequest(prompt="hi", cwd=cwd))
    async with run:
        return await run.result()


def _identity(result: SubagentResult) -> tuple[int, int]:
    assert result.stop_reason == "completed", result
    pid, sessions = result.output.split()
    return int(pid.removeprefix("pid=")), int(sessions.removeprefix("sessions="))


@pytest.mark.timeout(300)
async def test_50_sequential_runs_each_get_a_fresh_runtime_and_the_pool_stays_bounded(
    provider: Provider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="subagent_sdk")
    sdk = provider(FakeScript(echo_identity=True), prewarm=2)
    pids: list[int] = []
    with anyio.fail_after(240):
        async with sdk, peak_runtimes() as peak:
            await sdk.warm_up()
            assert sdk.warm_count == 2
            for _ in range(50):
                pid, sessions = _identity(await _run(sdk, tmp_path))
                # A runtime never saw another run's session.
                assert sessions == 1
                pids.append(pid)
        assert sdk.warm_count == 0
        assert runtime_pids() == set()
    assert len(set(pids)) == 50
    # One run in flight at a time: never more than prewarm + 1 runtimes alive.
    assert peak.runtimes <= 3
    warm_starts = [
        r for r in caplog.records if r.getMessage() == "an SDK run starts on a warm runtime"
    ]
    assert len(warm_starts) >= 25


async def test_concurrent_runs_never_push_the_pool_past_prewarm_plus_in_flight(
    provider: Provider, tmp_path: Path
) -> None:
    sdk = provider(FakeScript(echo_identity=True), prewarm=2)
    results: list[SubagentResult] = []
    with anyio.fail_after(120):
        async with sdk, peak_runtimes() as peak:
            await sdk.warm_up()
            for _ in range(3):
                async with anyio.create_task_group() as task_group:
                    for _ in range(4):

                        async def one() -> None:
                            results.append(await _run(sdk, tmp_path))

                        task_group.start_soon(one)
        assert runtime_pids() == set()
    assert len({_identity(result)[0] for result in results}) == 12
    assert peak.runtimes <= 2 + 4


async def test_a_warm_runtime_killed_while_idle_is_never_handed_out(
    provider: Provider, tmp_path: Path
) -> None:
    sdk = provider(FakeScript(echo_identity=True), prewarm=1)
    with anyio.fail_after(60):
        async with sdk:
            await sdk.warm_up()
            (warm,) = runtime_pids()
            os.kill(warm, signal.SIGKILL)
            pid, _ = _identity(await _run(sdk, tmp_path))
            assert pid != warm
            # The pool replaced it; the next run works too.
            pid_after, _ = _identity(await _run(sdk, tmp_path))
            assert pid_after not in (warm, pid)
        assert runtime_pids() == set()


async def test_a_request_for_another_cwd_is_never_served_by_a_warm_runtime(
    provider: Provider, tmp_path: Path
) -> None:
    """Without a config cwd the pool warms for the last requested cwd; the runtime's cwd is
    fixed at spawn, so a run for another cwd starts cold (and moves the pool there)."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    sdk = provider(FakeScript(echo_cwd=True), prewarm=1, cwd=None)
    with anyio.fail_after(60):
        async with sdk:
            await sdk.warm_up(first)
            for cwd in (second, second, first, first, second):
                assert await _run(sdk, cwd) == SubagentResult(
                    stop_reason="completed", output=str(cwd)
                )
        assert runtime_pids() == set()


async def test_a_runtime_failing_initialize_is_a_host_log_fact_and_runs_start_cold(
    provider: Provider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sdk = provider(FakeScript(initialize_error={"message": "SECRET"}), prewarm=2)
    with anyio.fail_after(60):
        async with sdk:
            await sdk.warm_up()
            assert sdk.warm_count == 0
            with pytest.raises(SubagentStartError) as caught:
                await _run(sdk, tmp_path)
        assert runtime_pids() == set()
    assert str(caught.value) == (
        "Subagent failure (provider: dsh-sdk; stage: initialize; category: protocol)"
    )
    assert "a warm SDK runtime failed to start" in caplog.text


async def test_closing_the_provider_tears_every_warm_runtime_down(
    provider: Provider, tmp_path: Path
) -> None:
    sdk = provider(FakeScript(), prewarm=3)
    with anyio.fail_after(60):
        await sdk.warm_up()
        assert len(runtime_pids()) == 3
        await sdk.aclose()
        assert runtime_pids() == set()
        assert sdk.warm_count == 0
        # Later runs start cold and leave nothing either.
        assert (await _run(sdk, tmp_path)).stop_reason == "completed"
        await sdk.aclose()
    assert runtime_pids() == set()


@pytest.mark.parametrize("caller", ["loop-thread", "other-thread"])
async def test_unregister_alone_tears_every_warm_runtime_down(
    provider: Provider, caller: str
) -> None:
    """The plain (sync) unregister function closes the pool promptly; nothing is awaited."""
    sdk = provider(FakeScript(), prewarm=3)
    registry = SubagentRegistry()
    unregister = registry.register(sdk)
    with anyio.fail_after(60):
        await sdk.warm_up()
        assert len(runtime_pids()) == 3
    with anyio.fail_after(10):
        if caller == "loop-thread":
            unregister()
        else:
            await anyio.to_thread.run_sync(unregister)
        assert registry.names() == []
        # Observed from outside: the trees are gone and the pool has let go of every child.
        await poll_until(lambda: not runtime_pids() and sdk.warm_count == 0)
