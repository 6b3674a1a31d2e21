"""Test support for process-owning code: a child subreaper, spawn tracking and a leak check.

Shipped (not under tests/) so every package's conftest can use it; it imports no pytest.

On Linux every managed process lives under its own guard, a child subreaper that reaps its
whole tree, so orphans never reach this process. Elsewhere, where PID 1 does not reap orphans,
killed grandchildren stay zombies: making the test process a child subreaper lets it adopt
them, and `reap_adopted()` collects them by pid — never with `waitpid(-1)`, which would steal
exit statuses from the event loop's child watcher. The guard server and its idle guards are
infrastructure that lives as long as this process; the leak checks leave them out.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Callable, Generator

import anyio
import psutil

from subagent_core._process import spawn_listeners
from subagent_core._process_tree import ProcessTree

from ._guard_floor import guarded_round_trip as guarded_round_trip
from ._import_graph import find_cycle as find_cycle
from ._import_graph import import_graph as import_graph
from ._otel import OTLPReceiver as OTLPReceiver
from ._otel import ReceivedSpan as ReceivedSpan
from ._otel import recorded_spans as recorded_spans
from ._otel import trace_ids as trace_ids
from ._sshd import TestSSHD as TestSSHD
from ._sshd import open_test_sshd as open_test_sshd
from ._sshd import sshd_available as sshd_available

_PR_SET_CHILD_SUBREAPER = 36


async def poll_until(predicate: Callable[[], bool], *, interval_seconds: float = 0.01) -> None:
    """Returns once `predicate()` holds, checking every `interval_seconds`.

    For state another process writes (a marker file, queue figures): it observes the state
    rather than assuming time passed. Bound it with `anyio.fail_after` in the caller.
    """
    while not predicate():  # noqa: ASYNC110 - the state is written elsewhere; no event exists
        await anyio.sleep(interval_seconds)


def become_subreaper() -> bool:
    """Makes this process adopt orphaned descendants (Linux only); True when it worked."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def reap_adopted(known: set[int] | None = None) -> None:
    """Collects zombie children of this process by pid (adopted orphans included)."""
    if sys.platform == "win32":
        return
    for child in psutil.Process().children():
        if known is not None and child.pid not in known:
            continue
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(child.pid, os.WNOHANG)
        except (psutil.NoSuchProcess, ChildProcessError, OSError):
            continue


def live_group_members(pgid: int) -> list[int]:
    """Pids of the group that are alive and not zombies."""
    tree = ProcessTree(pgid, pgid)
    tree.snapshot_group_only()
    return tree.alive()


def containment_processes() -> set[int]:
    """The guard server and its idle (childless) guards: infrastructure, never a leak.

    A guard that still has children is not listed: its tree is what a leak check looks for.
    """
    if sys.platform == "win32":
        return set()
    from subagent_core._guard_server import guard_server_pid

    server = guard_server_pid()
    if server is None:
        return set()
    pids = {server}
    with contextlib.suppress(psutil.Error):
        for guard in psutil.Process(server).children():
            with contextlib.suppress(psutil.Error):
                if not guard.children():
                    pids.add(guard.pid)
    return pids


def live_descendants() -> list[psutil.Process]:
    """Descendants of this process that are alive and not zombies (containment excluded)."""
    infrastructure = containment_processes()
    alive: list[psutil.Process] = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.pid not in infrastructure and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.NoSuchProcess:
            continue
    return alive


@contextlib.contextmanager
def track_spawns() -> Generator[list[int]]:
    """Records the leader pid of every managed process spawned inside the block."""
    spawned: list[int] = []
    spawn_listeners.append(spawned.append)
    try:
        yield spawned
    finally:
        spawn_listeners.remove(spawned.append)


def leaked_processes(groups: list[int]) -> list[str]:
    """Describes what is still alive: members of the given groups, or our own descendants.

    Reaps zombie children first (they count as gone). Returns an empty list when clean.
    """
    _let_orphaned_guards_exit()
    reap_adopted()
    leaks: list[str] = []
    for pgid in groups:
        leaks.extend(f"group {pgid}: pid {pid}" for pid in live_group_members(pgid))
    for proc in live_descendants():
        with contextlib.suppress(psutil.NoSuchProcess):
            leaks.append(f"descendant pid {proc.pid}: {' '.join(proc.cmdline())[:200]}")
    return leaks


ORPHANED_GUARD_EXIT_SECONDS = 2.0
"""How long a guard server whose host just exited may take to notice and exit itself."""


def _let_orphaned_guards_exit() -> None:
    """Waits (bounded) for guard servers of host processes that already exited.

    A test that runs a separate host interpreter sees the host's guard server re-parented
    to this (subreaper) process; it exits as soon as it reads its host's EOF, a moment after
    the host. One that outlives the bound is reported as a leak like anything else.
    """
    if sys.platform == "win32":
        return
    from subagent_core._guard_server import GUARD_SCRIPT

    ours = containment_processes()
    script = str(GUARD_SCRIPT)
    orphans: list[psutil.Process] = []
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if proc.pid in ours or proc.ppid() in ours:
                continue
            if script in proc.cmdline() and proc.status() != psutil.STATUS_ZOMBIE:
                orphans.append(proc)
    if orphans:
        with contextlib.suppress(psutil.Error):
            psutil.wait_procs(orphans, timeout=ORPHANED_GUARD_EXIT_SECONDS)


def kill_leaks(groups: list[int]) -> None:
    """Kills whatever `leaked_processes` would report, then reaps it.

    Guards are spared: once their trees are killed they reap them, report the tree gone to
    their owner and exit by themselves.
    """
    guards = _guards()
    for pgid in groups:
        for pid in live_group_members(pgid):
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
    for proc in live_descendants():
        if proc.pid not in guards:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
    infrastructure = containment_processes()
    with contextlib.suppress(psutil.Error):
        psutil.wait_procs(
            [p for p in psutil.Process().children(recursive=True) if p.pid not in infrastructure],
            timeout=2,
        )
    reap_adopted()


def _guards() -> set[int]:
    if sys.platform == "win32":
        return set()
    from subagent_core._guard_server import guard_server_pid

    server = guard_server_pid()
    if server is None:
        return set()
    with contextlib.suppress(psutil.Error):
        return {guard.pid for guard in psutil.Process(server).children()}
    return set()
