"""Containment: nothing a managed process starts outlives it, whatever it does (Linux guard)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import psutil
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from subagent_core import _containment
from subagent_core.kit import ChildCommand, ManagedProcess, ProcessOutcome, open_managed_process
from subagent_core.testing import live_descendants, poll_until

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the guard is Linux containment"
)

ChildArgv = Callable[..., list[str]]

DISPOSE_BOUND_SECONDS = 3.0
"""The fast goodbye is ~1.0 s with default graces (EOF 0.5 + TERM 0.5); slack for load."""


def is_gone(pid: int) -> bool:
    """True when the pid no longer runs (a zombie counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def alive(pids: list[int]) -> list[int]:
    return [pid for pid in pids if not is_gone(pid)]


async def hosts_guards_are_gone() -> None:
    """After a host process exits, its guard server exits on its own (it sees EOF): wait."""
    with anyio.fail_after(5):
        await poll_until(lambda: live_descendants() == [])


async def read_pids(proc: ManagedProcess) -> list[int]:
    assert proc.stdout is not None
    line = await BufferedByteReceiveStream(proc.stdout).receive_until(b"\n", 4096)
    return [int(part) for part in line.split()]


def is_under(pid: int, ancestor: int) -> bool:
    """True when `ancestor` is found by following parent links up from `pid`."""
    try:
        return any(parent.pid == ancestor for parent in psutil.Process(pid).parents())
    except psutil.NoSuchProcess:
        return False


async def test_fifty_setsid_sleepers_of_an_exited_leader_are_all_gone(child: ChildArgv) -> None:
    with anyio.fail_after(30):
        async with open_managed_process(child("setsid_sleepers", "50"), stdin="devnull") as proc:
            sleepers = await read_pids(proc)
            assert await proc.wait() == ProcessOutcome(exit_code=0, signal=None)
            assert len(alive(sleepers)) == 50
            # Orphans of their own sessions, yet still below this process (the run's guard).
            assert all(os.getsid(pid) == pid for pid in sleepers)
            assert all(is_under(pid, os.getpid()) for pid in sleepers)
            assert proc.tree_alive()
            assert await proc.terminate() is True
            assert not proc.tree_alive()
        assert alive(sleepers) == []


@pytest.mark.parametrize("stdout_mode", ["hold", "close"])
@pytest.mark.parametrize("env_mode", ["inherit", "clear-env"])
async def test_a_double_forked_daemon_is_gone(
    child: ChildArgv, stdout_mode: str, env_mode: str
) -> None:
    """fork → setsid → fork, optionally after `env -i`: no group, no parent link, no marker."""
    with anyio.fail_after(30):
        async with open_managed_process(child("double_fork_daemon", stdout_mode, env_mode)) as proc:
            daemon, env_size = await read_pids(proc)
            await proc.wait()
            if env_mode == "clear-env":
                assert env_size <= 2  # only what the interpreter itself may add
            assert not is_gone(daemon)
            assert os.getsid(daemon) != proc.pid
            assert is_under(daemon, os.getpid())
            assert await proc.terminate() is True
        assert is_gone(daemon)


async def test_a_grandchild_holding_stdout_while_the_leader_exits_is_gone(
    child: ChildArgv,
) -> None:
    """The leader's exit is observed at once; EOF on stdout comes only when the tree is gone."""
    with anyio.fail_after(30):
        async with open_managed_process(child("leader_exits_grandchild_holds")) as proc:
            assert proc.stdout is not None
            stdout = BufferedByteReceiveStream(proc.stdout)
            grandchild = int(await stdout.receive_until(b"\n", 64))
            assert await proc.wait() == ProcessOutcome(exit_code=3, signal=None)
            assert not is_gone(grandchild)
            assert await proc.terminate() is True
            assert is_gone(grandchild)
            assert await stdout.receive_exactly(0) == b""
            with pytest.raises(anyio.EndOfStream):
                await stdout.receive()


def pidfd_targets(pid: int) -> list[int]:
    """The pids that process `pid` holds a pidfd for."""
    found: list[int] = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:[pidfd]":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as info:
                found.extend(int(line.split()[1]) for line in info if line.startswith("Pid:"))
        except OSError:
            continue
    return found


def catches(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler for `signum` (`SigCgt` in its status)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (signum - 1)))
    return False


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs pidfd_open (Linux 5.3)")
async def test_the_guard_waits_on_the_leaders_pidfd_and_on_sigchld_only_for_escapees() -> None:
    """While the leader lives its guard holds a pidfd for it and no SIGCHLD handler; once the
    leader is gone and an escapee remains, SIGCHLD tells the guard when the tree ends."""
    with anyio.fail_after(30):
        argv = ["sh", "-c", "sleep 30 & echo ready; read line; exit 3"]
        async with open_managed_process(argv) as proc:
            assert proc.stdin is not None
            assert proc.stdout is not None
            await BufferedByteReceiveStream(proc.stdout).receive_until(b"\n", 64)
            guard = psutil.Process(proc.pid).ppid()
            assert pidfd_targets(guard) == [proc.pid]
            assert not catches(guard, signal.SIGCHLD)
            await proc.stdin.send(b"go\n")
            assert await proc.wait() == ProcessOutcome(exit_code=3, signal=None)
            await poll_until(lambda: catches(guard, signal.SIGCHLD))
            assert proc.tree_alive()
            assert await proc.terminate() is True


async def test_a_waiter_parked_on_the_leader_exit_wakes_when_another_reader_takes_the_fact() -> (
    None
):
    """Reading `outcome` elsewhere applies the exit message; a parked `wait()` still returns.

    The tree stays alive (a grandchild holds stdout), so no later message would wake the
    waiter: it must be woken by whoever applied the message.
    """
    with anyio.fail_after(30):
        argv = ["sh", "-c", "sleep 30 & echo $!; read line; exit 3"]
        async with open_managed_process(argv) as proc:
            assert proc.stdin is not None
            assert proc.stdout is not None
            stdout = BufferedByteReceiveStream(proc.stdout)
            await stdout.receive_until(b"\n", 64)
            waited: list[ProcessOutcome] = []

            async def park() -> None:
                waited.append(await proc.wait())

            guarded = proc.raw
            assert isinstance(guarded, _containment.GuardedProcess)
            control = guarded._link.sock  # pyright: ignore[reportPrivateUsage]
            async with anyio.create_task_group() as tg:
                tg.start_soon(park)
                await anyio.wait_all_tasks_blocked()
                await proc.stdin.send(b"exit now\n")
                # Block the loop until the exit message is there, then take it in the same step:
                # the loop never sees the socket readable, as when another task reads first.
                assert select.select([control], [], [], 10.0)[0] == [control]
                assert proc.outcome == ProcessOutcome(exit_code=3, signal=None)
            assert waited == [ProcessOutcome(exit_code=3, signal=None)]
            assert await proc.terminate() is True


async def test_default_graces_end_an_eof_deaf_term_trapping_tree_fast(child: ChildArgv) -> None:
    """EOF-deaf and TERM-trapping, with escapees: default graces confirm it gone in ~1 s."""
    with anyio.fail_after(30):
        async with open_managed_process(child("deaf_with_escapees")) as proc:
            pids = await read_pids(proc)
            started = anyio.current_time()
            assert await proc.terminate() is True
            elapsed = anyio.current_time() - started
            assert proc.outcome == ProcessOutcome(exit_code=None, signal="SIGKILL")
        assert alive(pids) == []
        assert elapsed < DISPOSE_BOUND_SECONDS


async def test_a_cooperative_child_still_exits_on_eof_with_default_graces(
    child: ChildArgv,
) -> None:
    with anyio.fail_after(30):
        async with open_managed_process(child("eof_exit")) as proc:
            assert proc.stdout is not None
            await BufferedByteReceiveStream(proc.stdout).receive_until(b"\n", 64)
            assert await proc.terminate() is True
            assert proc.outcome == ProcessOutcome(exit_code=0, signal=None)


async def test_a_child_command_is_accepted(child: ChildArgv, tmp_path: Path) -> None:
    argv = child("print_env")
    command = ChildCommand(command=argv[0], args=tuple(argv[1:]), env={"GIVEN": "1"}, cwd=tmp_path)
    with anyio.fail_after(20):
        async with open_managed_process(command, stdin="devnull") as proc:
            assert proc.stdout is not None
            out = b""
            async for chunk in proc.stdout:
                out += chunk
            assert "GIVEN" in out.decode().split()


def marked_processes(marker: str) -> list[int]:
    """Live processes whose command line holds `marker` (a scan of /proc; tests only)."""
    found: list[int] = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if any(marker in part for part in proc.info["cmdline"] or ()):
            found.append(proc.pid)
    return found


def background_argv(marker: str) -> list[str]:
    """A shell with a `setsid` sleeper in the background and a sleeper in the foreground."""
    return ["/bin/sh", "-c", f"setsid sleep {marker} & exec sleep {marker}"]


def stall_until_started(marker: str) -> None:
    """Blocks the event loop until both sleepers exist: the spawn has really happened."""
    deadline = time.monotonic() + 10
    while len(marked_processes(marker)) < 2:
        if time.monotonic() > deadline:
            raise AssertionError("the command never started")


@pytest.fixture
def spawn_window() -> Iterator[list[Callable[[], None]]]:
    """Hooks run synchronously inside the spawn, after the request, before its answer."""
    hooks: list[Callable[[], None]] = []

    def run_hooks() -> None:
        for hook in hooks:
            hook()

    _containment.request_listeners.append(run_hooks)
    try:
        yield hooks
    finally:
        _containment.request_listeners.remove(run_hooks)


async def test_a_cancel_landing_inside_the_spawn_leaks_nothing(
    spawn_window: list[Callable[[], None]],
) -> None:
    """Stall the loop right after the spawn starts, cancel the caller: 20 times, no leak."""
    for _ in range(20):
        marker = f"1000.{uuid.uuid4().int % 10**9}"
        entered: list[bool] = []
        with anyio.fail_after(10), anyio.CancelScope() as scope:

            def stall_and_cancel(marker: str = marker, scope: anyio.CancelScope = scope) -> None:
                stall_until_started(marker)
                scope.cancel()

            spawn_window[:] = [stall_and_cancel]
            async with open_managed_process(background_argv(marker)):
                entered.append(True)
        assert scope.cancelled_caught
        assert entered == []
        assert marked_processes(marker) == []
        assert live_descendants() == []


HOST = """
import sys
import anyio
from subagent_core import _containment
from subagent_core.kit import open_managed_process

def stall():
    sys.stdout.write("window\\n")
    sys.stdout.flush()
    sys.stdin.readline()  # SIGINT lands while the loop is stalled here

_containment.request_listeners.append(stall)

async def main():
    async with open_managed_process(sys.argv[1:], stdin="devnull", stdout="devnull"):
        sys.stdout.write("entered\\n")
        sys.stdout.flush()
        await anyio.sleep_forever()

anyio.run(main)
"""


async def sigint_inside_the_spawn(limiter: anyio.CapacityLimiter) -> None:
    marker = f"1000.{uuid.uuid4().int % 10**9}"
    # Each host is bounded on its own: an interpreter start on a loaded machine takes seconds.
    async with limiter:
        with anyio.fail_after(HOST_SECONDS):
            host = await anyio.open_process(
                [sys.executable, "-c", HOST, *background_argv(marker)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            async with host:
                assert host.stdout is not None
                assert host.stdin is not None
                line = await BufferedByteReceiveStream(host.stdout).receive_until(b"\n", 64)
                assert line == b"window"
                host.send_signal(signal.SIGINT)
                await host.stdin.send(b"\n")
                with anyio.fail_after(10):
                    code = await host.wait()
            assert code != 0  # KeyboardInterrupt
            assert marked_processes(marker) == []


HOST_SECONDS = 60.0
"""Bound on one interrupted host, start to exit; the exit itself is bounded at 10 s."""


@pytest.mark.timeout(4 * HOST_SECONDS + 60)
async def test_sigint_inside_the_spawn_ends_the_host_and_leaks_nothing() -> None:
    """20 host interpreters, 5 at a time (load on purpose), each interrupted in the window.

    Bounded per host and as a whole: 4 rounds of 5 hosts, each round within one host's bound.
    """
    limiter = anyio.CapacityLimiter(5)
    with anyio.fail_after(4 * HOST_SECONDS + 30):
        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(sigint_inside_the_spawn, limiter)
    await hosts_guards_are_gone()


PARENT = """
import sys
import anyio
from subagent_core.kit import open_managed_process

async def main():
    async with open_managed_process(sys.argv[1:]) as first:
        async with open_managed_process(sys.argv[1:]) as second:
            pids = []
            for proc in (first, second):
                pids.append(await anyio.streams.buffered.BufferedByteReceiveStream(
                    proc.stdout).receive_until(b"\\n", 200))
            sys.stdout.write(" ".join(p.decode() for p in pids) + "\\n")
            sys.stdout.flush()
            await anyio.sleep_forever()

import anyio.streams.buffered
anyio.run(main)
"""


async def test_sigkill_of_the_owner_ends_every_tree_within_two_seconds(
    child: ChildArgv,
) -> None:
    with anyio.fail_after(30):
        parent = await anyio.open_process(
            [sys.executable, "-c", PARENT, *child("deaf_with_escapees")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        async with parent:
            assert parent.stdout is not None
            line = await BufferedByteReceiveStream(parent.stdout).receive_until(b"\n", 400)
            pids = [int(part) for part in line.split()]
            assert len(pids) == 6
            assert alive(pids) == pids
            # Everything the parent started, its guards included.
            below = [proc.pid for proc in psutil.Process(parent.pid).children(recursive=True)]
            assert set(pids) <= set(below)
            parent.kill()
            await parent.wait()
            with anyio.fail_after(2):
                await poll_until(lambda: alive(below) == [])
    await hosts_guards_are_gone()


async def run_guard_command(child: ChildArgv, end: str) -> None:
    """`python -m subagent_core.guard -- CMD` around an EOF-deaf, TERM-trapping child."""
    argv = [sys.executable, "-m", "subagent_core.guard", "--eof-grace", "0.2"]
    argv += ["--term-grace", "0.2", "--", *child("deaf_with_escapees")]
    with anyio.fail_after(30):
        guard = await anyio.open_process(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        async with guard:
            assert guard.stdout is not None
            assert guard.stdin is not None
            line = await BufferedByteReceiveStream(guard.stdout).receive_until(b"\n", 200)
            pids = [int(part) for part in line.split()]
            assert alive(pids) == pids
            assert all(is_under(pid, guard.pid) for pid in pids)
            if end == "eof":
                await guard.stdin.aclose()
            else:
                guard.send_signal(signal.SIGHUP if end == "hup" else signal.SIGTERM)
            with anyio.fail_after(5):
                code = await guard.wait()
            assert code == 128 + signal.SIGKILL
            assert alive(pids) == []


@pytest.mark.parametrize("end", ["eof", "hup", "term"])
async def test_the_command_mode_guard_ends_its_tree(child: ChildArgv, end: str) -> None:
    """The remote side of an SSH child: EOF, a dropped connection or SIGTERM end everything."""
    await run_guard_command(child, end)


async def test_the_command_mode_guard_relays_stdin_and_exits_with_the_code() -> None:
    script = "import sys; data = sys.stdin.read(); print(data.upper()); sys.exit(4)"
    argv = [sys.executable, "-m", "subagent_core.guard", "--", sys.executable, "-c", script]
    with anyio.fail_after(30):
        done = await anyio.run_process(argv, input=b"hello", check=False)
    assert done.stdout == b"HELLO\n"
    assert done.returncode == 4


KILLS_ITS_GUARD = """
import os, signal, subprocess, sys
sleeper = subprocess.Popen(["sleep", "1000"], start_new_session=True)
print(sleeper.pid, flush=True)
os.kill(os.getppid(), signal.SIGKILL)
signal.pause()
"""


async def test_a_child_that_kills_its_guard_is_still_ended_but_not_confirmed() -> None:
    """Its orphans land at the guard server, which kills them; the owner cannot confirm it."""
    with anyio.fail_after(30):
        async with open_managed_process([sys.executable, "-c", KILLS_ITS_GUARD]) as proc:
            sleeper = (await read_pids(proc))[0]
            assert await proc.wait() == ProcessOutcome(exit_code=None, signal=None)
            assert await proc.terminate(0.1, 0.1, 0.1) is False
        await poll_until(lambda: alive([proc.pid, sleeper]) == [])


FIRST_SPAWN = """
import sys
import anyio
from subagent_core.kit import open_managed_process

async def main():
    # The first spawn of a fresh host goes through the guard server (no idle guard yet).
    for _ in range(3):
        async with open_managed_process(["/bin/echo", "hi"], stdin="devnull", stderr="pipe") as p:
            out = b"".join([chunk async for chunk in p.stdout])
            err = b"".join([chunk async for chunk in p.stderr])
            sys.stdout.write(f"{out!r} {err!r}\\n")

anyio.run(main)
"""


async def test_pipes_reach_eof_when_the_child_exits_on_every_spawn_path() -> None:
    """No guard holds a copy of a child's pipe: reading to EOF ends when the child exits."""
    with anyio.fail_after(30):
        done = await anyio.run_process([sys.executable, "-c", FIRST_SPAWN])
    assert done.stdout == b"b'hi\\n' b''\n" * 3
    await hosts_guards_are_gone()


async def test_a_large_environment_and_a_leader_signal_reach_the_child() -> None:
    """A request too large for one message travels in a memfd; `send_signal` hits the leader."""
    script = "import os, signal, sys; print(len(os.environ['BIG']), flush=True); signal.pause()"
    env = {**os.environ, "BIG": "x" * 100_000}
    with anyio.fail_after(30):
        async with open_managed_process([sys.executable, "-c", script], env=env) as proc:
            assert await read_pids(proc) == [100_000]
            proc.send_signal(signal.SIGUSR1)
            assert await proc.wait() == ProcessOutcome(exit_code=None, signal="SIGUSR1")


FORKING_HOST = """
import os, sys
import anyio
from subagent_core.kit import open_managed_process

async def spawn_echo():
    async with open_managed_process(["/bin/echo", "hi"], stdin="devnull") as proc:
        return b"".join([chunk async for chunk in proc.stdout])

print(anyio.run(spawn_echo), flush=True)
child = os.fork()
if child == 0:
    print(anyio.run(spawn_echo), flush=True)  # its own guard server, not its parent's
    os._exit(0)
os.waitpid(child, 0)
print(anyio.run(spawn_echo), flush=True)
"""


async def test_a_forked_host_gets_its_own_guards() -> None:
    with anyio.fail_after(30):
        done = await anyio.run_process([sys.executable, "-c", FORKING_HOST])
    assert done.stdout == b"b'hi\\n'\n" * 3
    await hosts_guards_are_gone()
