from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_acp import ACPConfig, ACPProvider
from subagent_acp.testing import fake_child_argv, script_env
from subagent_core import SubagentRegistry
from subagent_core.kit import ChildCommand, open_managed_process
from subagent_core.testing.pytest_plugin import TEST_GRACES, asyncio_backend
from subagent_ray import RayPlacement
from subagent_ray.testing import MARKER_ENV, local_cluster, marked_processes

NODES = {"node_a": {"node_a": 1.0}, "node_b": {"node_b": 1.0}}
"""The session cluster: a head and two nodes, each named by a custom resource."""

# The cluster's daemons are this process's children for the whole session: no leak guard here;
# `marker` finds what a test leaves behind instead.
anyio_backend = asyncio_backend()


@pytest.fixture(scope="session")
def cluster() -> Iterator[Any]:
    """One real 3-node local cluster for the whole session (starting one costs seconds)."""
    # Under `uv run`, Ray would package this checkout and start every worker through uv;
    # the nodes here share this environment already.
    os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"
    with local_cluster(NODES) as running:
        # Warm-up outside every test's own bound: connect the driver and start the host on
        # both nodes (a worker start imports Ray: seconds on a loaded machine).
        anyio.run(_warm, running.address, backend="asyncio")
        yield running


async def _warm(address: str) -> None:
    for node in NODES:
        placement = RayPlacement(address=address, resources={node: 0.001})
        command = ChildCommand(command=sys.executable, args=("-c", ""), remote=placement)
        with anyio.fail_after(200):
            async with open_managed_process(command, stdout="devnull") as proc:
                await proc.wait()


@pytest.fixture
def placement_on(cluster: Any) -> Callable[[str], RayPlacement]:
    def build(resource: str) -> RayPlacement:
        return RayPlacement(address=cluster.address, resources={resource: 0.001})

    return build


@pytest.fixture
def marker() -> Iterator[str]:
    """A fresh environment marker; the test fails if anything carrying it is left alive."""
    mark = uuid.uuid4().hex
    yield mark
    left = marked_processes(mark)
    assert left == [], f"processes left behind: {left}"


MakeConfig = Callable[..., ACPConfig]


@pytest.fixture
def make_config(
    tmp_path: Path, marker: str, placement_on: Callable[[str], RayPlacement]
) -> MakeConfig:
    """An ACPConfig running the fake ACP child on `node` with `script`, marked for leak checks."""

    def build(
        script: Mapping[str, object] | None = None,
        *,
        node: str = "node_b",
        remote: RayPlacement | None = None,
        **overrides: Any,
    ) -> ACPConfig:
        argv = fake_child_argv()
        env = {**script_env(dict(script or {})), MARKER_ENV: marker}
        fields: dict[str, Any] = {**TEST_GRACES, **overrides}
        return ACPConfig(
            command=argv[0],
            args=argv[1:],
            cwd=tmp_path,
            env=env,
            remote=remote if remote is not None else placement_on(node),
            **fields,
        )

    return build


@pytest.fixture
def registry_for() -> Callable[[ACPConfig], SubagentRegistry]:
    def build(config: ACPConfig) -> SubagentRegistry:
        registry = SubagentRegistry()
        registry.register(ACPProvider(config))
        return registry

    return build
