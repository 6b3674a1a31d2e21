"""Test and benchmark support: a real multi-node Ray cluster on this machine, and leak counts.

`local_cluster()` starts `ray.cluster_utils.Cluster` (a head and worker nodes, each a real
raylet with its own workers); `marked_processes(marker)` finds every live process whose
environment carries a marker, so a test can tell that nothing of a run is left on any node —
the agent and every descendant inherit the child's environment. Guards do not (theirs is the
guard server's): `guards_below(raylet)` records a node's while its host lives, and `alive_of`
checks them afterwards.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from typing import Any

MARKER_ENV = "SUBAGENT_RAY_TEST_MARK"
"""The environment entry tests put in a child's env to find its tree afterwards."""
HOST_TITLE = "ray::NodeHost"
"""The process title Ray gives a node host's worker."""


@contextmanager
def local_cluster(nodes: Mapping[str, Mapping[str, float]]) -> Generator[Any]:
    """A head node (no CPUs for tasks) plus one node per entry, with those custom resources.

    Yields the `Cluster`; shuts the driver connection and every node down on exit.
    """
    import ray
    from ray.cluster_utils import Cluster

    # No dashboard, small object stores: a node then starts in seconds on a loaded machine.
    light: dict[str, Any] = {"object_store_memory": 80 << 20}
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, **light}
    )
    try:
        for resources in nodes.values():
            cluster.add_node(num_cpus=1, resources=dict(resources), **light)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def _environ_has(pid: int, entry: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            return entry in file.read().split(b"\0")
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2 : data.rfind(b")") + 3] not in (b"Z", b"X")


def marked_processes(marker: str) -> list[int]:
    """Live (non-zombie) processes whose environment has `MARKER_ENV=marker`."""
    entry = f"{MARKER_ENV}={marker}".encode()
    return [
        int(name)
        for name in os.listdir("/proc")
        if name.isdigit() and _environ_has(int(name), entry) and _alive(int(name))
    ]


def host_workers() -> list[int]:
    """Pids of every live node host worker on this machine (all nodes of a local cluster)."""
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as file:
                title = file.read()
        except OSError:
            continue
        if title.startswith(HOST_TITLE.encode()) and _alive(int(name)):
            found.append(int(name))
    return found


def guards_below(pid: int) -> list[int]:
    """Live guard processes below `pid` (a raylet, a host worker): the host's guard server and
    its guards, recorded while the host lives (once it is gone they are nobody's children)."""
    if sys.platform == "win32":  # pragma: no cover - node hosts run on Linux only
        return []
    from subagent_core.guard import task_children

    found: list[int] = []
    pending = task_children(pid) or []
    while pending:
        child = pending.pop()
        pending.extend(task_children(child) or [])
        try:
            with open(f"/proc/{child}/cmdline", "rb") as file:
                argv = file.read().split(b"\0")
        except OSError:
            continue
        if any(part.endswith(b"guard.py") for part in argv) and _alive(child):
            found.append(child)
    return found


def alive_of(pids: list[int]) -> list[int]:
    """Those of `pids` still alive (a zombie counts as gone)."""
    return [pid for pid in pids if _alive(pid)]


async def wait_until_gone(marker: str, seconds: float) -> float:
    """Waits (bounded, polling `/proc`) until nothing carries `marker`; the seconds it took."""
    import anyio

    start = anyio.current_time()
    with anyio.move_on_after(seconds):
        while marked_processes(marker):  # noqa: ASYNC110 - other processes' ends, seen in /proc
            await anyio.sleep(0.02)
    return anyio.current_time() - start


async def wait_until_dead(pids: list[int], seconds: float) -> float:
    """Waits (bounded, polling `/proc`) until none of `pids` is alive; the seconds it took."""
    import anyio

    start = anyio.current_time()
    with anyio.move_on_after(seconds):
        while alive_of(pids):  # noqa: ASYNC110 - other processes' ends, seen in /proc
            await anyio.sleep(0.02)
    return anyio.current_time() - start
