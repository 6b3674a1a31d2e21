"""The parent-SIGKILL checks: a host interpreter holding a live run, or a live session after
one turn, is killed; nothing survives.

The host runs outside any containment of ours (a plain child process), exactly as a user's
program does: whatever outlives it is what the provider failed to contain.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Final

import anyio
import psutil
from anyio.streams.buffered import BufferedByteReceiveStream

from subagent_core.testing import poll_until, reap_adopted

from ._target import ConformanceTarget, HostMode, Scenario

ORPHAN_SECONDS: Final = 5.0
"""How long the tree of a SIGKILLed host may take to be gone (milliseconds when contained)."""

HOST_MODULE: Final = "subagent_core.testing.conformance._host"


HOSTILE: Final = Scenario(
    ignore_eof=True, trap_term=True, grandchild_holds_stdout=True, setsid_escapee=True
)
"""The tree the host leaves behind: deaf to EOF and SIGTERM, a grandchild, an escapee."""


def host_argv(
    target: ConformanceTarget, scenario: Scenario, workspace: Path, mode: HostMode = "run"
) -> list[str]:
    """argv of a host interpreter that rebuilds `target` from its file and plays `scenario`:
    one live run (`run`), or a session that has completed one turn (`session`)."""
    cls = type(target)
    payload = json.dumps(dataclasses.asdict(scenario))
    path = inspect.getfile(cls)
    argv = [sys.executable, "-m", HOST_MODULE, path, cls.__qualname__, payload, str(workspace)]
    return [*argv, mode]


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    alive: list[psutil.Process] = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.Error:
            continue
    return alive


def _end(procs: list[psutil.Process]) -> None:
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(procs, timeout=2)
    reap_adopted()


async def check_parent_sigkill_leaves_nothing(target: ConformanceTarget, workspace: Path) -> None:
    """SIGKILL of the process holding a live run ends the run's whole tree, escapees included."""
    scenario = dataclasses.replace(HOSTILE, hang_at="turn", text="ready")
    await sigkilled_host_leaves_nothing(target, scenario, workspace, "run")


async def check_session_parent_sigkill_leaves_nothing(
    target: ConformanceTarget, workspace: Path
) -> None:
    """SIGKILL of the process holding a live session (one turn done) ends its whole tree."""
    scenario = dataclasses.replace(HOSTILE, echo_prompt=True)
    await sigkilled_host_leaves_nothing(target, scenario, workspace, "session")


async def sigkilled_host_leaves_nothing(
    target: ConformanceTarget, scenario: Scenario, workspace: Path, mode: HostMode
) -> None:
    """A host playing `scenario` in `mode` is SIGKILLed once live: nothing of it survives."""
    log = workspace / "conformance-host.log"
    with log.open("wb") as errors:
        host = await anyio.open_process(
            host_argv(target, scenario, workspace, mode),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
        )
    below: list[psutil.Process] = []
    try:
        assert host.stdout is not None
        try:
            line = await BufferedByteReceiveStream(host.stdout).receive_until(b"\n", 65536)
        except (anyio.IncompleteRead, anyio.EndOfStream):
            tail = log.read_text("utf-8", "replace")[-2000:]
            raise AssertionError(f"the host ended before its {mode} was live:\n{tail}") from None
        groups = [int(pid) for pid in json.loads(line)]
        below = psutil.Process(host.pid).children(recursive=True)
        assert groups, f"the host's {mode} spawned no managed process"
        assert set(groups) <= {proc.pid for proc in below}, f"the {mode}'s child is not the host's"
    finally:
        with anyio.move_on_after(ORPHAN_SECONDS, shield=True):
            host.kill()
            await host.aclose()
    with anyio.move_on_after(ORPHAN_SECONDS):
        await poll_until(lambda: _alive(below) == [])
    left = _alive(below)
    if left:
        described = "; ".join(f"pid {proc.pid}" for proc in left)
        _end(left)
        raise AssertionError(
            f"{ORPHAN_SECONDS} s after the host's SIGKILL still alive: {described}"
        )
    reap_adopted()
