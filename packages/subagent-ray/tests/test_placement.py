"""RayPlacement without a cluster: validation, a lazy `ray`, and start errors in a fresh driver."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from subagent_core import Placement
from subagent_core.kit import ChildCommand
from subagent_ray import RayPlacement


def test_a_ray_placement_is_a_placement_and_rides_on_child_command() -> None:
    placement = RayPlacement(resources={"node_b": 0.001}, node_id=None)
    assert isinstance(placement, Placement)
    command = ChildCommand(command="agent", env={"A": "1"}, remote=placement)
    assert command.remote is placement
    assert dict(placement.resources) == {"node_b": 0.001}
    assert placement.local_eof_grace_seconds == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"address": ""}, "remote.address must be a non-empty printable string"),
        ({"namespace": "evil\n"}, "remote.namespace must be a non-empty printable string"),
        ({"node_id": 5}, "remote.node_id must be a non-empty printable string"),
        ({"resources": {"evil": -1}}, "remote.resources must be a mapping"),
        ({"resources": ["evil"]}, "remote.resources must be a mapping"),
        ({"resources": {"evil": True}}, "remote.resources must be a mapping"),
        ({"eof_grace_seconds": -1}, "remote.eof_grace_seconds must be a finite number"),
        ({"lease_seconds": 0}, "remote.lease_seconds must be a finite number of seconds, above 0"),
        ({"start_timeout_seconds": float("inf")}, "remote.start_timeout_seconds must be"),
    ],
)
def test_bad_fields_are_refused_without_echoing_them(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=r"^remote\.") as caught:
        RayPlacement(**fields)  # pyright: ignore[reportArgumentType]
    assert str(caught.value).startswith(message)
    assert "evil" not in str(caught.value)


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=100,
        check=False,
    )


def test_importing_the_package_does_not_import_ray() -> None:
    done = _python(
        """
        import sys, subagent_ray
        subagent_ray.RayPlacement(address="127.0.0.1:1")
        print("ray" in sys.modules)
        """
    )
    assert done.stdout.strip() == "False", done.stderr


def test_a_missing_ray_is_an_import_error_naming_the_extra() -> None:
    done = _python(
        """
        import sys
        sys.modules["ray"] = None  # what an environment without Ray looks like to `import`
        from subagent_ray._driver import ray_module
        try:
            ray_module()
        except ImportError as error:
            print(error)
        """
    )
    assert "pip install 'subagent-ray'" in done.stdout, done.stderr
    assert "needs the `ray` package" in done.stdout


def test_an_unreachable_cluster_is_a_start_error_and_nothing_runs() -> None:
    done = _python(
        """
        import anyio, sys
        from pathlib import Path
        from subagent_acp import ACPConfig, ACPProvider
        from subagent_core import SubagentRegistry, SubagentRequest, SubagentStartError
        from subagent_ray import RayPlacement

        async def main():
            placement = RayPlacement(address="127.0.0.1:9", start_timeout_seconds=20)
            config = ACPConfig(command="agent", remote=placement)
            registry = SubagentRegistry()
            registry.register(ACPProvider(config))
            try:
                await registry.start("acp", SubagentRequest(prompt="go", cwd=Path.cwd()))
            except SubagentStartError as error:
                print("start error:", error.diagnostic, flush=True)

        anyio.run(main)
        # Ray's connect attempt lives on in its thread past the start's bound (known gap).
        import os; os._exit(0)
        """
    )
    assert done.stdout.strip() == (
        "start error: Subagent failure (provider: acp; stage: process; category: process-start)"
    ), done.stderr[-2000:]
