"""The shipped test support: spawn tracking, the subreaper, and leak detection."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import psutil
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from subagent_core import child_env
from subagent_core.kit import open_managed_process
from subagent_core.testing import (
    become_subreaper,
    guarded_round_trip,
    kill_leaks,
    leaked_processes,
    live_descendants,
    live_group_members,
    track_spawns,
)

ChildArgv = Callable[..., list[str]]


async def test_spawns_are_tracked_and_the_group_is_seen_live(
    child: ChildArgv, process_leak_guard: list[int]
) -> None:
    with anyio.fail_after(20), track_spawns() as inner:
        async with open_managed_process(child("eof_exit")) as proc:
            assert proc.stdout is not None
            await BufferedByteReceiveStream(proc.stdout).receive_until(b"\n", 64)
            assert inner == [proc.pid]
            assert process_leak_guard == [proc.pid]
            assert live_group_members(proc.pid) == [proc.pid]
        assert live_group_members(proc.pid) == []
        assert leaked_processes(inner) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux")
@pytest.mark.parametrize("mode", ["same-group", "setsid"])
async def test_an_orphaned_grandchild_stays_contained_reported_and_killed(
    child: ChildArgv, mode: str
) -> None:
    """The orphan re-parents to the run's guard (a descendant of ours), never to PID 1."""
    assert become_subreaper()
    args = ("setsid",) if mode == "setsid" else ()
    with anyio.fail_after(20):
        async with open_managed_process(child("grandchild_holds_stdout", *args)) as proc:
            assert proc.stdout is not None
            grandchild = int(await BufferedByteReceiveStream(proc.stdout).receive_until(b"\n", 64))
            await proc.close_stdin()
            await proc.wait()
            # The leader is gone: its orphan was adopted by the run's guard, our descendant.
            guard = psutil.Process(grandchild).parent()
            assert guard is not None
            assert guard.pid in {p.pid for p in psutil.Process().children(recursive=True)}
            leaks = leaked_processes([proc.pid])
            in_group = [f"group {proc.pid}: pid {grandchild}"] if mode == "same-group" else []
            assert leaks[: len(in_group)] == in_group
            # The guard holding the orphan is reported too: it is alive because its tree is.
            expected = [
                f"descendant pid {p.pid}: {' '.join(p.cmdline())[:200]}"
                for p in (guard, psutil.Process(grandchild))
            ]
            assert sorted(leaks[len(in_group) :]) == sorted(expected)
            kill_leaks([proc.pid])
            assert leaked_processes([proc.pid]) == []
            assert not psutil.pid_exists(grandchild)  # killed and reaped, not left a zombie
            assert await proc.terminate(0.0, 0.0, 5.0) is True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="guards are Linux")
def test_the_guarded_round_trip_reports_the_exit_code_and_leaves_nothing(tmp_path: Path) -> None:
    """The floor benchmarks measure against: a real guard, its tree gone before it returns."""
    env = child_env({})
    assert guarded_round_trip(["/bin/sh", "-c", "exit 3"], cwd=tmp_path, env=env) == 3
    assert (
        guarded_round_trip(["/bin/sh", "-c", "echo out; echo err >&2"], cwd=tmp_path, env=env) == 0
    )
    flood = "head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2; exit 4"
    assert guarded_round_trip(["/bin/sh", "-c", flood], cwd=tmp_path, env=env) == 4
    with pytest.raises(RuntimeError):
        guarded_round_trip(["/nonexistent/program"], cwd=tmp_path, env=env)
    assert live_descendants() == []
