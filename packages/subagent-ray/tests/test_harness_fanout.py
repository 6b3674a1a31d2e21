"""`harness fanout` across two nodes of the real cluster, placed by `harness.toml` alone.

The harness runs as its own process (its own Ray driver, as a user runs it); each child's
provider table says `placement = "ray"` with the node's resource. While both children wait
at a gate, the hosts the harness started are found on the two nodes (a node host's worker is
its raylet's child); then the gate opens, both complete, each leaves its patch, and nothing
of either run — process, worktree or branch — is left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from subagent_core import child_env
from subagent_core.kit import open_managed_process
from subagent_ray._driver import live_hosts
from subagent_ray.testing import MARKER_ENV, host_workers, wait_until_gone

pytestmark = [pytest.mark.timeout(400), pytest.mark.filterwarnings("ignore::EncodingWarning:ray")]


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    return done.stdout


def _provider(name: str, node: str, address: str, script: dict[str, Any], marker: str) -> str:
    args = ["-m", "subagent_acp.testing", "--script-json", json.dumps(script)]
    quoted = ", ".join(json.dumps(arg) for arg in args)  # a JSON string is a TOML basic string
    return (
        f'[providers.{name}]\nkind = "acp"\ncommand = {json.dumps(sys.executable)}\n'
        f"args = [{quoted}]\n"
        f"env = {{ {MARKER_ENV} = {json.dumps(marker)} }}\n"
        "dispose_eof_grace_seconds = 0.5\ndispose_grace_seconds = 0.5\n"
        f'placement = "ray"\n'
        f"ray = {{ address = {json.dumps(address)}, resources = {{ {node} = 0.001 }} }}\n"
    )


def _raylet_of(cluster: Any, resource: str) -> int:
    import ray

    (node_id,) = [node["NodeID"] for node in ray.nodes() if resource in node["Resources"]]
    for node in cluster.list_all_nodes():
        if node.node_id == node_id:
            return node.all_processes["raylet"][0].process.pid
    raise AssertionError(f"no node offers {resource}")


def _foreign_hosts_under(raylet: int) -> list[int]:
    """Host workers on the node of `raylet` that this test process did not start."""
    mine = {host.worker_pid for host in live_hosts()}
    found: list[int] = []
    for pid in host_workers():
        try:
            parent = psutil.Process(pid).ppid()
        except psutil.NoSuchProcess:
            continue
        if parent == raylet and pid not in mine:
            found.append(pid)
    return found


async def _fan_out(
    argv: list[str],
    repo: Path,
    env: dict[str, str],
    out: bytearray,
    started: Path,
    gate: Path,
    cluster: Any,
) -> int | None:
    """Runs the harness to its exit, opening the gate once both children wait at it."""
    with anyio.fail_after(240):
        async with open_managed_process(
            argv, cwd=repo, env=env, stdin="devnull", stderr="devnull"
        ) as harness:
            assert harness.stdout is not None

            async def drain() -> None:
                assert harness.stdout is not None
                async for chunk in harness.stdout:
                    out.extend(chunk)

            async with anyio.create_task_group() as group:
                group.start_soon(drain)
                # The children say they wait by a file: a fact to poll, bounded by the block.
                while not all((started / n).exists() for n in ("left", "right")):  # noqa: ASYNC110
                    await anyio.sleep(0.05)
                # Both children wait at the gate: the harness's own host runs on each node.
                for node in ("node_a", "node_b"):
                    assert len(_foreign_hosts_under(_raylet_of(cluster, node))) == 1, node
                gate.write_text("open", encoding="utf-8")  # noqa: ASYNC240
            outcome = await harness.wait()
    return outcome.exit_code


async def test_harness_fanout_spreads_two_children_over_two_nodes(
    cluster, marker, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "base.txt").write_text("one\n", encoding="utf-8")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    gate, started = tmp_path / "gate", tmp_path / "started"
    started.mkdir()
    config = tmp_path / "harness.toml"
    config.write_text(
        "".join(
            _provider(
                name,
                node,
                cluster.address,
                {
                    "text": f"done on {node}",
                    "gate_file": str(gate),
                    "markers": [
                        {"at": "prompt", "path": f"{name}.txt", "text": f"{node}\n"},
                        {"at": "prompt", "path": str(started / name), "text": "1"},
                    ],
                },
                marker,
            )
            for name, node in (("left", "node_a"), ("right", "node_b"))
        ),
        encoding="utf-8",
    )
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = child_env(
        {
            "TMPDIR": str(temp),
            "HARNESS_STATE_DIR": str(tmp_path / "state"),
            "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
        }
    )
    argv = [sys.executable, "-m", "harness", "fanout", "--config", str(config), "--json"]
    argv += ["-a", "left", "-a", "right", "write your file"]
    out = bytearray()
    try:
        exit_code = await _fan_out(argv, repo, env, out, started, gate, cluster)
    finally:
        # Should the harness itself fail, its driver's death ends the hosts and so the guards,
        # whose ladders take a moment: the marker fixture then finds a settled machine.
        await wait_until_gone(marker, 10.0)

    assert exit_code == 0, out.decode(errors="replace")[-2000:]
    lines = [json.loads(line) for line in out.decode().splitlines()]
    children = {line["agent"]: line for line in lines if line["type"] == "child"}
    assert {agent: child["stop_reason"] for agent, child in children.items()} == {
        "left": "completed",
        "right": "completed",
    }
    for agent, node in (("left", "node_a"), ("right", "node_b")):
        assert children[agent]["output"].startswith(f"done on {node}")
        patch = Path(children[agent]["patch"]).read_text(encoding="utf-8")  # noqa: ASYNC240
        assert f"+++ b/{agent}.txt" in patch
        assert f"+{node}" in patch
    assert lines[-1] == {
        "type": "summary",
        "run": Path(children["left"]["patch"]).parent.name,
        "isolation": "worktree",
        "kept": False,
        "completed": 2,
        "passed": 0,
        "total": 2,
        "report": None,
        "exit_code": 0,
    }
    assert _git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert _git(repo, "branch", "--list", "fanout/*") == ""
    assert os.listdir(temp) == []
