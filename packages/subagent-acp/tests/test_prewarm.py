"""Pre-spawned fresh children: each used once, replaced in the background once its run is under
way, never handed out dead, never more than `prewarm` besides the runs, all gone when the
provider closes."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import anyio
import psutil
import pytest
from subagent_acp import ACPProvider
from subagent_core import (
    MessageChunk,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
)
from subagent_core.testing import poll_until

ECHO = re.compile(r"pid=(\d+) sessions=(\d+) cwd=(.*)")


def fake_children() -> list[psutil.Process]:
    """Live fake ACP children anywhere below this process."""
    found: list[psutil.Process] = []
    for process in psutil.Process().children(recursive=True):
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            if "subagent_acp.testing" in " ".join(process.cmdline()):
                found.append(process)
        except psutil.NoSuchProcess:
            continue
    return found


async def one_run(provider: ACPProvider, request: SubagentRequest | None = None) -> str:
    registry = SubagentRegistry()
    registry.register(provider)
    run = await registry.start("acp", request or SubagentRequest(prompt="go"))
    async with run:
        result = await run.result()
    assert result.stop_reason == "completed", result
    return result.output


async def test_fifty_sequential_runs_each_get_a_fresh_process(make_config) -> None:
    config = make_config({"echo_pid": True}, prewarm=2)
    pids: list[int] = []
    with anyio.fail_after(120):
        async with ACPProvider(config) as provider:
            await provider.warm_up()
            assert provider.warm_count == 2
            for _ in range(50):
                match = ECHO.fullmatch(await one_run(provider))
                assert match is not None
                pids.append(int(match[1]))
                assert match[2] == "1"  # no trace of an earlier session: a fresh process
                assert provider.warm_count <= 2
                # The pool never exceeds N besides the runs it handed out (none live here).
                assert len(fake_children()) <= 2
    assert len(set(pids)) == 50
    assert fake_children() == []


async def test_the_pool_never_exceeds_n_besides_its_runs(make_config, tmp_path: Path) -> None:
    """Three runs in flight on a pool of two: at most 2 + 3 children at any point."""
    gate = tmp_path / "gate"
    config = make_config({"gate_file": str(gate), "text": "ok"}, prewarm=2)
    counts: list[int] = []
    with anyio.fail_after(60):
        async with ACPProvider(config) as provider:
            await provider.warm_up()
            registry = SubagentRegistry()
            registry.register(provider)
            runs = [await registry.start("acp", SubagentRequest(prompt="go")) for _ in range(3)]
            counts.append(len(fake_children()))
            await provider.warm_up()
            counts.append(len(fake_children()))
            assert provider.warm_count == 2
            gate.touch()
            for run in runs:
                async with run:
                    assert await run.result() == SubagentResult(
                        stop_reason="completed", output="ok"
                    )
            counts.append(len(fake_children()))
    assert max(counts) <= 2 + 3
    assert counts[-1] <= 2
    assert fake_children() == []


async def test_the_replacement_starts_once_the_run_is_under_way(
    make_config, tmp_path: Path
) -> None:
    """Taking a warm child spawns nothing until its run's first update, so the replacement's
    start does not compete with the hand-over (`session/new`, the prompt) itself."""
    gate = tmp_path / "gate"
    config = make_config({"gate_file": str(gate), "text": "ok"}, prewarm=1)
    with anyio.fail_after(60):
        async with ACPProvider(config) as provider:
            await provider.warm_up()
            registry = SubagentRegistry()
            registry.register(provider)
            run = await registry.start("acp", SubagentRequest(prompt="go"))
            async with run:
                assert provider.warm_count == 0
                assert len(fake_children()) == 1
                gate.touch()
                first = await anext(aiter(run.events()))
                assert first == MessageChunk(text="ok")
                assert provider.warm_count == 1  # refilled as the update arrived
                assert await run.result() == SubagentResult(stop_reason="completed", output="ok")
            await provider.warm_up()
            assert provider.warm_count == 1
            assert len(fake_children()) == 1
    assert fake_children() == []


async def test_runs_on_warm_children_skip_the_spawn(make_config, tmp_path: Path) -> None:
    """The child a run gets was started before the run: it existed when warm_up returned."""
    config = make_config({"echo_pid": True}, prewarm=1)
    with anyio.fail_after(60):
        async with ACPProvider(config) as provider:
            await provider.warm_up()
            warm = {process.pid for process in fake_children()}
            match = ECHO.fullmatch(await one_run(provider))
            assert match is not None
            assert int(match[1]) in warm


async def test_a_warm_child_killed_while_idle_is_never_handed_out(make_config) -> None:
    config = make_config({"echo_pid": True, "text": "!"}, prewarm=2)
    with anyio.fail_after(60):
        async with ACPProvider(config) as provider:
            await provider.warm_up()
            killed = {process.pid for process in fake_children()}
            assert len(killed) == 2
            for pid in killed:
                os.kill(pid, signal.SIGKILL)
            # At once, before the pool can notice: the run still completes on a live child.
            output = await one_run(provider)
            match = ECHO.fullmatch(output.removesuffix("!"))
            assert match is not None
            assert int(match[1]) not in killed
            await provider.warm_up()
            assert provider.warm_count == 2


async def test_closing_the_provider_ends_every_warm_child(make_config) -> None:
    provider = ACPProvider(make_config({}, prewarm=3))
    registry = SubagentRegistry()
    unregister = registry.register(provider)
    with anyio.fail_after(60):
        await provider.warm_up()
        assert len(fake_children()) == 3
        unregister()
        await provider.aclose()
        await provider.aclose()  # idempotent
    assert provider.warm_count == 0
    assert fake_children() == []
    # A closed provider still serves, cold.
    assert await one_run(provider) == ""


@pytest.mark.parametrize("caller", ["loop-thread", "other-thread"])
async def test_unregister_alone_ends_every_warm_child(make_config, caller: str) -> None:
    """The plain (sync) unregister function closes the pool promptly; nothing is awaited."""
    provider = ACPProvider(make_config({}, prewarm=3))
    registry = SubagentRegistry()
    unregister = registry.register(provider)
    with anyio.fail_after(60):
        await provider.warm_up()
        assert len(fake_children()) == 3
    with anyio.fail_after(10):
        if caller == "loop-thread":
            unregister()
        else:
            await anyio.to_thread.run_sync(unregister)
        assert registry.names() == []
        # Observed from outside: the trees are gone and the pool has let go of every child.
        await poll_until(lambda: not fake_children() and provider.warm_count == 0)


def test_a_loop_ending_with_warm_children_ends_them_and_spawns_no_more(make_config) -> None:
    """Nobody closed the provider: the loop's end cancels the warm children's tasks, whose
    teardown ends them, and the pool must not refill while that happens."""
    provider = ACPProvider(make_config({}, prewarm=2))

    async def warm() -> None:
        with anyio.fail_after(60):
            await provider.warm_up()
            assert len(fake_children()) == 2

    anyio.run(warm, backend="asyncio")
    assert fake_children() == []


async def test_a_run_in_flight_survives_the_provider_closing(make_config, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    provider = ACPProvider(make_config({"gate_file": str(gate), "text": "done"}, prewarm=1))
    registry = SubagentRegistry()
    registry.register(provider)
    with anyio.fail_after(60):
        await provider.warm_up()
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        async with run:
            await provider.aclose()
            gate.touch()
            assert await run.result() == SubagentResult(stop_reason="completed", output="done")
    assert fake_children() == []


async def test_a_request_for_another_cwd_is_not_served_by_a_warm_child(
    make_config, tmp_path: Path
) -> None:
    first = tmp_path / "a"
    second = tmp_path / "b"
    first.mkdir()
    second.mkdir()
    config = make_config({"echo_pid": True}, prewarm=1, cwd=None)
    with anyio.fail_after(60):
        async with ACPProvider(config) as provider:
            await provider.warm_up(first)
            warm = {process.pid for process in fake_children()}
            output = await one_run(provider, SubagentRequest(prompt="go", cwd=second))
            match = ECHO.fullmatch(output)
            assert match is not None
            assert int(match[1]) not in warm
            assert match[3] == str(second)
            # The pool moved to the last requested cwd.
            await provider.warm_up(second)
            output = await one_run(provider, SubagentRequest(prompt="go", cwd=second))
            match = ECHO.fullmatch(output)
            assert match is not None
            assert match[3] == str(second)


async def test_a_child_failing_initialize_is_never_warm_and_never_retried_in_a_loop(
    make_config,
) -> None:
    config = make_config({"error": {"at": "initialize", "code": -32000}}, prewarm=2)
    with anyio.fail_after(60):
        async with ACPProvider(config) as provider:
            await provider.warm_up()
            assert provider.warm_count == 0
            registry = SubagentRegistry()
            registry.register(provider)
            with pytest.raises(SubagentStartError) as caught:
                await registry.start("acp", SubagentRequest(prompt="go"))
            assert caught.value.diagnostic == (
                "Subagent failure (provider: acp; stage: initialize; category: authentication)"
            )
            await provider.warm_up()
            assert provider.warm_count == 0


def test_prewarm_is_validated(make_config) -> None:
    for bad in (-1, 65, True, 1.5):
        with pytest.raises(ValueError, match=r"^ACPConfig\.prewarm "):
            make_config({}, prewarm=bad)
