"""RayPlacement on a real local 3-node cluster: the fake ACP child on a named node, cancel,
hostile trees, a SIGKILLed driver, node loss, raylet loss, fan-out and a flood."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from typing import Any

import anyio
import anyio.abc
import psutil
import pytest
from subagent_core import SubagentRequest
from subagent_core.kit import ChildCommand, ManagedProcess, SpawnError, open_managed_process
from subagent_ray._channel import UNACKED_WRITES, RayChannel
from subagent_ray._driver import live_hosts
from subagent_ray.testing import (
    MARKER_ENV,
    alive_of,
    guards_below,
    marked_processes,
    wait_until_dead,
    wait_until_gone,
)

TRANSPORT = "category: transport"


# The session cluster starts in the first test's setup (tens of seconds on a loaded machine).
# Ray's own modules open files without an encoding; under CI's PYTHONWARNDEFAULTENCODING those
# warnings fire inside its callback threads, where an error would kill the callback and leave the
# awaiting call hanging instead of failing the test. Only those are ignored; others stay errors.
pytestmark = [pytest.mark.timeout(400), pytest.mark.filterwarnings("ignore::EncodingWarning:ray")]


async def test_fake_acp_child_completes_on_the_named_node(make_config, registry_for) -> None:
    config = make_config({"text": "hello from node b"})
    with anyio.fail_after(60):
        async with await registry_for(config).start("acp", SubagentRequest(prompt="go")) as run:
            result = await run.result()
            assert await run.dispose() is None
    assert (result.stop_reason, result.diagnostic) == ("completed", None)
    assert result.output.startswith("hello from node b")


async def test_the_child_runs_where_the_resources_are_in_its_cwd(
    cluster, marker, placement_on, tmp_path
) -> None:
    import ray

    probe = "import os; print('here', os.getcwd())"
    command = ChildCommand(
        command=sys.executable,
        args=("-c", probe),
        cwd=tmp_path,
        env={MARKER_ENV: marker},
        remote=placement_on("node_b"),
    )
    with anyio.fail_after(60):
        async with open_managed_process(command, stdout="pipe") as proc:
            assert proc.stdout is not None
            output = b""
            with contextlib.suppress(anyio.EndOfStream):
                while True:
                    output += await proc.stdout.receive()
            assert output == f"here {tmp_path}\n".encode()
            assert (await proc.wait()).exit_code == 0
            channel = proc.raw
    node_b = next(node["NodeID"] for node in ray.nodes() if "node_b" in node["Resources"])
    assert isinstance(channel, RayChannel)
    assert channel.host.node_id == node_b


async def test_cancel_settles_aborted_and_the_tree_is_gone(
    make_config, registry_for, marker
) -> None:
    config = make_config({"hang_at": "prompt", "grandchild": True, "markers": []})
    with anyio.fail_after(60):
        request = SubagentRequest(prompt="go")
        run = await registry_for(config).start("acp", request)
        assert marked_processes(marker)
        request.cancel.cancel()
        result = await run.result()
        assert await run.dispose() is None
    assert (result.stop_reason, result.diagnostic) == ("aborted", None)
    assert marked_processes(marker) == []


async def test_eof_deaf_term_trapping_setsid_child_is_gone_after_dispose(
    make_config, registry_for, marker
) -> None:
    script = {
        "grandchild": True,
        "grandchild_setsid": True,
        "ignore_eof": True,
        "trap_sigterm": True,
        "text": "ok",
    }
    with anyio.fail_after(60):
        async with await registry_for(make_config(script)).start(
            "acp", SubagentRequest(prompt="go")
        ) as run:
            result = await run.result()
            assert await run.dispose() is None
    assert (result.stop_reason, result.output) == ("completed", "ok")
    assert marked_processes(marker) == []


DOUBLE_FORK = textwrap.dedent(
    """
    import os, signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    up, told = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(told, b"x")  # the daemon exists before the leader says ready
            time.sleep(600)
        os._exit(0)
    os.read(up, 1)
    print("ready", flush=True)
    time.sleep(600)
    """
)


def python_on(placement: Any, script: str, marker: str) -> ChildCommand:
    """`python -c SCRIPT` on the placement, its tree marked for the leak count."""
    return ChildCommand(
        command=sys.executable, args=("-c", script), env={MARKER_ENV: marker}, remote=placement
    )


async def test_double_forked_daemon_is_gone_after_the_block(marker, placement_on) -> None:
    command = python_on(placement_on("node_a"), DOUBLE_FORK, marker)
    with anyio.fail_after(60):
        async with open_managed_process(command, stdout="pipe") as proc:
            assert proc.stdout is not None
            assert (await proc.stdout.receive()).startswith(b"ready")
            assert len(marked_processes(marker)) >= 2  # the leader and the daemon
        assert proc.confirmed_gone()
    assert marked_processes(marker) == []


DRIVER = textwrap.dedent(
    """
    import json, sys, anyio
    from subagent_acp import ACPConfig, ACPProvider
    from subagent_core import SubagentRegistry, SubagentRequest
    from subagent_ray import RayPlacement

    async def main():
        fields = json.loads(sys.argv[1])
        address = fields.pop("address")
        config = ACPConfig(**fields, remote=RayPlacement(address=address, resources={"node_a": 0.001}))
        registry = SubagentRegistry()
        registry.register(ACPProvider(config))
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        print("started", flush=True)
        await run.result()

    anyio.run(main)
    """
)


async def test_sigkilled_driver_leaves_nothing_within_3_seconds(cluster, marker, tmp_path) -> None:
    from subagent_acp.testing import fake_child_argv, script_env

    argv = fake_child_argv()
    script = {"hang_at": "prompt", "ignore_eof": True, "trap_sigterm": True, "grandchild": True}
    fields = {
        "address": cluster.address,
        "command": argv[0],
        "args": argv[1:],
        "cwd": str(tmp_path),
        "env": {**script_env(script), MARKER_ENV: marker},
    }
    with (tmp_path / "driver.err").open("wb") as driver_err:
        driver = subprocess.Popen(  # noqa: ASYNC220 - the driver under test, SIGKILLed below
            [sys.executable, "-c", DRIVER, json.dumps(fields)],
            stdout=subprocess.PIPE,
            stderr=driver_err,
            start_new_session=True,
        )
    try:
        assert driver.stdout is not None
        with anyio.fail_after(90):
            line = await anyio.to_thread.run_sync(driver.stdout.readline)
        assert line == b"started\n", (tmp_path / "driver.err").read_text(encoding="utf-8")[-3000:]
        assert len(marked_processes(marker)) >= 2  # the agent and its grandchild
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        took = await wait_until_gone(marker, 3.0)
        assert marked_processes(marker) == [], f"left after {took:.2f} s"
        print(f"driver SIGKILL: 0 processes after {took:.2f} s")
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        driver.stdout.close()  # type: ignore[union-attr]


async def _started_on_new_node(
    cluster, make_config, registry_for, resource: str
) -> tuple[Any, Any]:
    # In this thread: starting a node installs signal handlers (blocks the loop for seconds).
    node = cluster.add_node(num_cpus=1, resources={resource: 1.0}, object_store_memory=80 << 20)
    cluster.wait_for_nodes()
    config = make_config(
        {"hang_at": "prompt", "grandchild": True, "ignore_eof": True}, node=resource
    )
    run = await registry_for(config).start("acp", SubagentRequest(prompt="go"))
    return node, run


async def test_node_removed_mid_run_is_transport_and_nothing_is_left(
    cluster, make_config, registry_for, marker
) -> None:
    with anyio.fail_after(100):
        node, run = await _started_on_new_node(cluster, make_config, registry_for, "victim_n")
        async with run:
            assert marked_processes(marker)
            guards = guards_below(node.all_processes["raylet"][0].process.pid)
            assert len(guards) >= 2  # the host's guard server and the run's guard
            cluster.remove_node(node)
            result = await run.result()
            await run.dispose()
        took = await wait_until_gone(marker, 5.0)
        await wait_until_dead(guards, 5.0)
    assert result.stop_reason == "error"
    assert result.diagnostic is not None
    assert result.diagnostic.splitlines()[0].endswith(f"stage: prompt; {TRANSPORT})")
    assert marked_processes(marker) == [], f"left after {took:.2f} s"
    assert alive_of(guards) == []


async def test_raylet_sigkill_leaves_nothing_within_3_seconds(
    cluster, make_config, registry_for, marker
) -> None:
    with anyio.fail_after(100):
        node, run = await _started_on_new_node(cluster, make_config, registry_for, "victim_r")
        try:
            async with run:
                assert marked_processes(marker)
                raylet = node.all_processes["raylet"][0].process
                guards = guards_below(raylet.pid)
                assert len(guards) >= 2  # the host's guard server and the run's guard
                os.kill(raylet.pid, signal.SIGKILL)
                took = await wait_until_gone(marker, 3.0)
                assert marked_processes(marker) == [], f"left after {took:.2f} s"
                await wait_until_dead(guards, 3.0)
                assert alive_of(guards) == []
                print(f"raylet SIGKILL: 0 processes after {took:.2f} s")
                result = await run.result()
            assert result.stop_reason == "error"
            assert result.diagnostic is not None
            assert TRANSPORT in result.diagnostic.splitlines()[0]
        finally:
            cluster.remove_node(node, allow_graceful=False)


async def test_a_host_start_no_node_can_take_does_not_stall_the_other_hosts_lease(
    cluster, placement_on, marker
) -> None:
    # Placing a host blocks for up to its start bound (here longer than the 10 s lease); the
    # lease thread must go on renewing the hosts that already run, so node_a's stays the same.
    from subagent_ray import RayPlacement
    from subagent_ray._driver import host_for

    async def node_a_host() -> tuple[int, bool]:
        placement = placement_on("node_a")
        host = await host_for(
            None,
            placement.resources,
            address=placement.address,
            namespace=None,
            lease_seconds=placement.lease_seconds,
            start_timeout_seconds=placement.start_timeout_seconds,
        )
        return host.worker_pid, host.lost

    async def run_on_node_a() -> None:
        command = ChildCommand(
            command=sys.executable,
            args=("-c", "print('ok')"),
            env={MARKER_ENV: marker},
            remote=placement_on("node_a"),
        )
        received = b""
        async with open_managed_process(command, stdout="pipe") as proc:
            assert proc.stdout is not None
            with contextlib.suppress(anyio.EndOfStream):
                while True:
                    received += await proc.stdout.receive()
            assert (await proc.wait()).exit_code == 0
        assert received == b"ok\n"

    with anyio.fail_after(90):
        await run_on_node_a()
        before = await node_a_host()
        nowhere = RayPlacement(
            address=cluster.address, resources={"no_such_node": 1.0}, start_timeout_seconds=13
        )
        stuck = ChildCommand(command=sys.executable, args=("-c", ""), remote=nowhere)
        with pytest.raises(SpawnError) as refused:
            async with open_managed_process(stuck, stdout="devnull"):
                pass
        assert refused.value.reason == "unreachable"
        await run_on_node_a()
        assert await node_a_host() == before


async def test_100_concurrent_runs_across_two_nodes_share_two_hosts(
    make_config, registry_for, marker
) -> None:
    registries = {
        node: registry_for(make_config({"text": f"ok {node}"}, node=node))
        for node in ("node_a", "node_b")
    }
    results: list[tuple[str, str]] = []
    peak_hosts = 0

    async def one(node: str) -> None:
        nonlocal peak_hosts
        async with await registries[node].start("acp", SubagentRequest(prompt="go")) as run:
            # This driver's hosts: another driver's (an earlier test's subprocess) may still
            # be ending, and host_workers() sees every one on the machine.
            peak_hosts = max(peak_hosts, len({host.worker_pid for host in live_hosts()}))
            result = await run.result()
            results.append((result.stop_reason, result.output))

    with anyio.fail_after(110):
        async with anyio.create_task_group() as group:
            for index in range(100):
                group.start_soon(one, ("node_a", "node_b")[index % 2])
    assert len(results) == 100
    assert {reason for reason, _ in results} == {"completed"}
    assert sorted({output for _, output in results}) == ["ok node_a", "ok node_b"]
    # One host per node, whatever the number of runs: the cluster has three nodes.
    assert 2 <= peak_hosts <= 3
    print(f"100 runs: at most {peak_hosts} host workers")


async def test_1_gb_stdout_flood_keeps_the_parent_rss_bounded(marker, placement_on) -> None:
    total = 1 << 30
    command = ChildCommand(
        command="head",
        args=("-c", str(total), "/dev/zero"),
        env={MARKER_ENV: marker},
        remote=placement_on("node_a"),
    )
    me = psutil.Process()
    before = me.memory_info().rss
    peak = before
    received = 0
    with anyio.fail_after(110):
        async with open_managed_process(command, stdout="pipe") as proc:
            assert proc.stdout is not None
            try:
                while True:
                    received += len(await proc.stdout.receive(1 << 20))
                    if received % (64 << 20) < (1 << 20):
                        peak = max(peak, me.memory_info().rss)
            except anyio.EndOfStream:
                pass
            assert (await proc.wait()).exit_code == 0
    peak = max(peak, me.memory_info().rss)
    assert received == total
    growth = (peak - before) >> 20
    print(f"1 GiB flood: parent RSS grew {growth} MiB")
    assert growth < 256


async def test_stdin_writes_sent_ahead_land_whole_and_in_order(marker, placement_on) -> None:
    """Sends do not wait for their acknowledgements, so many are in flight at once; the host
    applies them by number, and `cat` echoes every byte in the order it was sent."""
    lines = [f"{index:05d} {'x' * (index % 700)}\n".encode() for index in range(2000)]
    expected = b"".join(lines)
    command = ChildCommand(command="cat", env={MARKER_ENV: marker}, remote=placement_on("node_a"))
    echoed = bytearray()
    with anyio.fail_after(110):
        async with open_managed_process(command, stdout="pipe") as proc:
            assert proc.stdin is not None
            assert proc.stdout is not None

            async def feed() -> None:
                assert proc.stdin is not None
                for line in lines:
                    await proc.stdin.send(line)
                await proc.stdin.aclose()  # EOF only after every write landed: cat then exits

            async with anyio.create_task_group() as group:
                group.start_soon(feed)
                with contextlib.suppress(anyio.EndOfStream):
                    while True:
                        echoed += await proc.stdout.receive()
            assert (await proc.wait()).exit_code == 0
    assert bytes(echoed) == expected
    assert marked_processes(marker) == []


async def until_ready(proc: ManagedProcess) -> anyio.abc.ByteSendStream:
    """Waits for the child's `ready` line; returns its stdin."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    assert (await proc.stdout.receive()).startswith(b"ready")
    return proc.stdin


CLOSES_STDIN = "import os, sys, time; os.close(0); print('ready', flush=True); time.sleep(600)"


async def test_a_child_that_closed_its_stdin_breaks_a_later_send(marker, placement_on) -> None:
    """The broken pipe shows at a later send, within the writes allowed ahead of their
    acknowledgements (as a pipe's buffer would hide it for a while), never as a hang."""
    command = python_on(placement_on("node_b"), CLOSES_STDIN, marker)
    with anyio.fail_after(60):
        async with open_managed_process(command, stdout="pipe") as proc:
            stdin = await until_ready(proc)
            sent = 0
            broken = False
            while not broken and sent <= UNACKED_WRITES + 1:
                try:
                    await stdin.send(b"ping\n")
                except anyio.BrokenResourceError:
                    broken = True
                else:
                    sent += 1
            assert broken, f"{sent} sends and no broken pipe"
    assert marked_processes(marker) == []


NEVER_READS = "import time; print('ready', flush=True); time.sleep(600)"


async def test_a_child_that_never_reads_holds_its_writer_to_the_bound(marker, placement_on) -> None:
    """Sends go ahead of their acknowledgements only so far: once the child's pipe is full and
    16 writes wait on the host, a send waits (and can be cancelled); the block still ends the
    tree. Without the bound every send would return at once, thousands in the window."""
    item = b"x" * (64 << 10)
    accepted = 0
    command = python_on(placement_on("node_a"), NEVER_READS, marker)
    with anyio.fail_after(60):
        async with open_managed_process(command, stdout="pipe") as proc:
            stdin = await until_ready(proc)
            with anyio.move_on_after(5) as window:
                while True:
                    await stdin.send(item)
                    accepted += 1
            assert window.cancelled_caught
        assert proc.confirmed_gone()
    # The pipe (64 KiB), the write stuck on it, and the writes sent ahead of their answers.
    assert 1 <= accepted <= UNACKED_WRITES + 3
    assert marked_processes(marker) == []
