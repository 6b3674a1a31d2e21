"""The node's ladder carries the caller's kill grace, without a cluster.

The placement's own EOF and TERM graces are the node's (they bound `local_eof_grace_seconds`,
as an ssh remote guard's do); the kill grace is the caller's, as for a local child. Both
halves are checked here: what the driver side sends to the host's `spawn`, and what the host
body (`NodeHost`, run in this process without Ray) hands to `open_managed_process` and to its
ladder.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from subagent_core.kit import ChildCommand, ManagedProcess, SpawnError, open_managed_process
from subagent_ray import RayPlacement
from subagent_ray._driver import Host
from subagent_ray._host import NodeHost

KILL_GRACE = 7.5
"""A kill grace no default has, so only the caller's can be the one seen."""


class _RecordingHost(Host):
    """A host that records each call and refuses every start (`not-found`): nothing runs."""

    def __init__(self) -> None:
        super().__init__(actor=None, node_id="node", worker_pid=0)
        self.calls: list[tuple[str, tuple[object, ...]]] = []

    async def call(self, method: str, *args: object) -> Any:
        self.calls.append((method, args))
        return "not-found"


async def test_the_driver_sends_the_callers_kill_grace_to_the_node(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    host = _RecordingHost()

    async def host_for(*args: object, **kwargs: object) -> Host:
        return host

    monkeypatch.setattr("subagent_ray._placement.host_for", host_for)
    placement = RayPlacement(eof_grace_seconds=0.25, term_grace_seconds=0.75)
    command = ChildCommand(command="agent", cwd=tmp_path, remote=placement)
    with anyio.fail_after(30), pytest.raises(SpawnError) as caught:
        async with open_managed_process(
            command,
            eof_grace_seconds=1.0,
            term_grace_seconds=2.0,
            kill_grace_seconds=KILL_GRACE,
        ):
            pass
    assert caught.value.reason == "not-found"
    [(method, args)] = host.calls
    assert method == "spawn"
    # the node's EOF and TERM graces are the placement's; its kill grace is the caller's
    assert args[-3:] == (0.25, 0.75, KILL_GRACE)


async def test_the_node_host_runs_its_ladder_with_the_given_kill_grace(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    opened: list[float] = []
    ladders: list[tuple[float, float, float]] = []
    closed = anyio.Event()
    terminate_real = ManagedProcess.terminate

    @asynccontextmanager
    async def open_recording(argv: list[str], **options: Any) -> AsyncGenerator[ManagedProcess]:
        opened.append(options["kill_grace_seconds"])
        try:
            async with open_managed_process(argv, **options) as managed:
                yield managed
        finally:
            closed.set()

    async def terminate_recording(
        managed: ManagedProcess, eof: float, term: float, kill: float
    ) -> bool:
        ladders.append((eof, term, kill))
        return await terminate_real(managed, eof, term, kill)

    def open_as_host_does(
        argv: list[str], **options: Any
    ) -> AbstractAsyncContextManager[ManagedProcess]:
        return open_recording(argv, **options)

    monkeypatch.setattr("subagent_ray._host.open_managed_process", open_as_host_does)
    monkeypatch.setattr(ManagedProcess, "terminate", terminate_recording)
    host = NodeHost(lease_seconds=60.0)  # no `start()`: that joins Ray and watches the raylet
    reads_to_eof = [sys.executable, "-c", "import sys; sys.stdin.buffer.read()"]
    with anyio.fail_after(60):
        pid = await host.spawn(
            "child", reads_to_eof, {}, str(tmp_path), "devnull", 0.25, 0.75, KILL_GRACE
        )
        assert isinstance(pid, int)
        host.close_stdin("child", 0)
        assert await host.wait("child") == 0
        host.release("child")
        await closed.wait()
    assert opened == [KILL_GRACE]
    assert ladders == [(0.25, 0.75, KILL_GRACE)]
    assert host.children() == 0
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
