"""The managed process over real children: ladder steps, the whole tree, spawn failures."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.abc
import psutil
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from subagent_core import child_env
from subagent_core.kit import ManagedProcess, ProcessOutcome, SpawnError, open_managed_process
from subagent_core.testing import poll_until

ChildArgv = Callable[..., list[str]]

# Short graces keep the suite quick; a step that must not be reached gets a long one instead.
SHORT = 0.5
LONG = 30.0


async def read_line(proc: ManagedProcess) -> bytes:
    """Reads one readiness line from the child's stdout (the child wrote it, so no sleeping)."""
    assert proc.stdout is not None
    return await BufferedByteReceiveStream(proc.stdout).receive_until(b"\n", 1024)


async def drain(stream: anyio.abc.ByteReceiveStream) -> int:
    """Reads until EOF; returns the byte count."""
    total = 0
    try:
        while True:
            total += len(await stream.receive())
    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        return total


def is_gone(pid: int) -> bool:
    """True when the pid no longer runs (a zombie counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def test_a_child_exiting_on_eof_reports_exit_code_0_and_no_signal(child: ChildArgv) -> None:
    with anyio.fail_after(20):
        async with open_managed_process(child("eof_exit")) as proc:
            assert await read_line(proc) == b"ready"
            assert proc.outcome is None
            assert proc.tree_alive()
            # A long SIGTERM grace would show in the outcome as a signal if EOF were not enough.
            assert await proc.terminate(LONG, LONG, LONG) is True
            assert proc.outcome == ProcessOutcome(exit_code=0, signal=None)
            assert not proc.tree_alive()


async def test_a_child_ignoring_eof_is_ended_by_sigterm(child: ChildArgv) -> None:
    with anyio.fail_after(20):
        async with open_managed_process(child("ignore_eof")) as proc:
            assert await read_line(proc) == b"ready"
            assert await proc.terminate(SHORT, LONG, LONG) is True
            assert proc.outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")


async def test_a_child_trapping_sigterm_is_ended_by_sigkill(child: ChildArgv) -> None:
    with anyio.fail_after(20):
        async with open_managed_process(child("trap_term")) as proc:
            assert await read_line(proc) == b"ready"
            assert await proc.terminate(SHORT, SHORT, LONG) is True
            assert proc.outcome == ProcessOutcome(exit_code=None, signal="SIGKILL")


@pytest.mark.parametrize("eof_by", ["ladder", "caller"])
@pytest.mark.parametrize("mode", ["same-group", "setsid"])
async def test_a_grandchild_holding_stdout_does_not_hang_the_ladder_and_is_gone(
    child: ChildArgv, mode: str, eof_by: str
) -> None:
    """The leader exits on EOF; its grandchild (ignoring SIGTERM) keeps stdout open until killed.

    EOF comes from the ladder itself, or from the caller before the ladder runs (then the leader
    is gone when the ladder starts, and the tree was snapshotted when stdin was closed).
    """
    args = ("setsid",) if mode == "setsid" else ()
    with anyio.fail_after(30):
        async with open_managed_process(child("grandchild_holds_stdout", *args)) as proc:
            assert proc.stdout is not None
            grandchild = int(await read_line(proc))
            assert proc.pgid == proc.pid
            if mode == "setsid":
                assert os.getpgid(grandchild) == grandchild  # it left the leader's group
            else:
                assert os.getpgid(grandchild) == proc.pgid
            if eof_by == "caller":
                await proc.close_stdin()
                assert await proc.wait() == ProcessOutcome(exit_code=0, signal=None)
            # The EOF grace only has to outlast the leader's own exit on EOF.
            assert await proc.terminate(2.0, SHORT, LONG) is True
            assert proc.outcome == ProcessOutcome(exit_code=0, signal=None)
            assert is_gone(grandchild)
            assert not proc.tree_alive()
            # The grandchild's end closed the last writer, so reading stdout reaches EOF.
            assert await drain(proc.stdout) == 0


async def test_wait_returns_at_leader_exit_while_a_grandchild_holds_stdout(
    child: ChildArgv,
) -> None:
    with anyio.fail_after(30):
        async with open_managed_process(
            child("grandchild_holds_stdout"),
            eof_grace_seconds=SHORT,
            term_grace_seconds=SHORT,
            kill_grace_seconds=LONG,
        ) as proc:
            grandchild = int(await read_line(proc))
            await proc.close_stdin()
            assert await proc.wait() == ProcessOutcome(exit_code=0, signal=None)
            assert not is_gone(grandchild)
            assert proc.tree_alive()
        assert is_gone(grandchild)


async def test_leaving_the_block_runs_the_ladder_with_the_given_graces(child: ChildArgv) -> None:
    with anyio.fail_after(20):
        async with open_managed_process(
            child("trap_term"),
            eof_grace_seconds=SHORT,
            term_grace_seconds=SHORT,
            kill_grace_seconds=LONG,
        ) as proc:
            assert await read_line(proc) == b"ready"
        assert proc.outcome == ProcessOutcome(exit_code=None, signal="SIGKILL")
        assert not proc.tree_alive()


async def test_an_exception_in_the_block_still_ends_the_tree(child: ChildArgv) -> None:
    opened: list[ManagedProcess] = []

    async def fail_inside() -> None:
        async with open_managed_process(
            child("ignore_eof"), eof_grace_seconds=SHORT, term_grace_seconds=LONG
        ) as proc:
            opened.append(proc)
            assert await read_line(proc) == b"ready"
            raise RuntimeError("boom")

    with anyio.fail_after(20), pytest.raises(RuntimeError, match=r"^boom$"):
        await fail_inside()
    assert opened[0].outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")
    assert not opened[0].tree_alive()


async def test_a_cancelled_owner_still_ends_the_tree(child: ChildArgv) -> None:
    with anyio.fail_after(20):
        proc: ManagedProcess | None = None
        with anyio.CancelScope() as scope:
            async with open_managed_process(
                child("ignore_eof"), eof_grace_seconds=SHORT, term_grace_seconds=LONG
            ) as proc:
                assert await read_line(proc) == b"ready"
                scope.cancel()
                await anyio.sleep_forever()
        assert scope.cancelled_caught
        assert proc is not None
        assert proc.outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")
        assert not proc.tree_alive()


async def test_signal_tree_steps_outside_the_ladder_and_wait_tree_gone_sees_the_end(
    child: ChildArgv,
) -> None:
    """A relaying owner (a node host) carries out another owner's steps: `term` reaches a
    SIGTERM-trapping leader and does not end it, `kill` does; `wait_tree_gone` returns then."""
    with anyio.fail_after(20):
        async with open_managed_process(child("trap_term")) as proc:
            assert await read_line(proc) == b"ready"
            proc.signal_tree("term")
            with anyio.move_on_after(SHORT):
                await proc.wait_tree_gone()
            assert proc.tree_alive()
            proc.signal_tree("kill")
            assert await proc.wait_tree_gone() is True
            assert not proc.tree_alive()
            assert proc.outcome == ProcessOutcome(exit_code=None, signal="SIGKILL")


async def test_terminate_is_idempotent(child: ChildArgv) -> None:
    with anyio.fail_after(20):
        async with open_managed_process(child("ignore_eof")) as proc:
            assert await read_line(proc) == b"ready"
            assert await proc.terminate(SHORT, LONG, LONG) is True
            # Confirmed gone: later calls return at once, even with graces that would escalate.
            assert await proc.terminate(0.0, 0.0, 0.0) is True
            assert await proc.terminate() is True
            assert proc.outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")


async def test_cancelling_the_task_awaiting_terminate_does_not_skip_cleanup(
    child: ChildArgv,
) -> None:
    with anyio.fail_after(20):
        async with open_managed_process(child("ignore_eof")) as proc:
            assert await read_line(proc) == b"ready"
            entered = anyio.Event()
            finished: list[bool] = []

            async def stop() -> None:
                entered.set()
                finished.append(await proc.terminate(SHORT, LONG, LONG))

            async with anyio.create_task_group() as tg:
                tg.start_soon(stop)
                await entered.wait()
                tg.cancel_scope.cancel()
            # The shielded ladder ran to its end before the cancelled task group could exit.
            assert proc.outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")
            assert not proc.tree_alive()
            assert await proc.terminate(0.0, 0.0, 0.0) is True


async def test_a_child_flooding_stdout_nobody_reads_is_terminated(child: ChildArgv) -> None:
    """The child blocks on a full pipe; EOF means nothing to it, SIGTERM ends it."""
    with anyio.fail_after(20):
        async with open_managed_process(child("flood_stdout")) as proc:
            assert await read_line(proc) == b"ready"
            assert await proc.terminate(SHORT, LONG, LONG) is True
            assert proc.outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")


async def test_a_child_flooding_stdout_while_drained_is_terminated(child: ChildArgv) -> None:
    with anyio.fail_after(20):
        async with open_managed_process(child("flood_stdout")) as proc:
            assert proc.stdout is not None
            stdout = BufferedByteReceiveStream(proc.stdout)
            assert await stdout.receive_until(b"\n", 1024) == b"ready"
            drained: list[int] = []

            async def keep_reading() -> None:
                drained.append(await drain(stdout))

            async with anyio.create_task_group() as tg:
                tg.start_soon(keep_reading)
                assert await proc.terminate(SHORT, LONG, LONG) is True
            assert proc.outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")
            assert drained[0] > 0


async def test_a_piped_stderr_drained_by_the_caller_lets_the_child_finish(
    child: ChildArgv,
) -> None:
    size = 1 << 20  # far beyond a pipe buffer: without the reader the child would block
    with anyio.fail_after(30):
        async with open_managed_process(child("stderr_flood", str(size)), stderr="pipe") as proc:
            assert proc.stderr is not None
            stderr = proc.stderr
            counted: list[int] = []

            async def read_stderr() -> None:
                counted.append(await drain(stderr))

            async with anyio.create_task_group() as tg:
                tg.start_soon(read_stderr)
                assert await read_line(proc) == b"done"
                assert await proc.terminate(LONG, LONG, LONG) is True
            assert counted == [size]
            assert proc.outcome == ProcessOutcome(exit_code=0, signal=None)


async def test_stdio_modes_and_a_nonzero_exit_code(child: ChildArgv, tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    with anyio.fail_after(20), log.open("wb") as sink:
        async with open_managed_process(
            child("exit_code", "3"), stdin="devnull", stdout="devnull", stderr=sink
        ) as proc:
            assert proc.stdin is None
            assert proc.stdout is None
            assert proc.stderr is None
            assert await proc.wait() == ProcessOutcome(exit_code=3, signal=None)
            assert proc.outcome == ProcessOutcome(exit_code=3, signal=None)
            assert await proc.terminate(0.0, 0.0, LONG) is True


async def test_the_child_gets_exactly_the_env_and_cwd_it_is_given(
    child: ChildArgv, tmp_path: Path
) -> None:
    parent = {"PATH": os.environ.get("PATH", ""), "OPENAI_API_KEY": "sk-parent", "LANG": "C.UTF-8"}
    env = child_env({"CHILD_TOKEN": "given"}, parent)
    with anyio.fail_after(20):
        async with open_managed_process(
            [sys.executable, "-c", "import os; print(os.getcwd())"],
            cwd=tmp_path,
            env=env,
            stdin="devnull",
        ) as proc:
            assert await read_line(proc) == str(await anyio.Path(tmp_path).resolve()).encode()
        async with open_managed_process(child("print_env"), env=env, stdin="devnull") as proc:
            assert proc.stdout is not None
            out = b""
            async for chunk in proc.stdout:
                out += chunk
            names = set(out.decode().split())
            # The interpreter may add its own variables (e.g. LC_CTYPE); ours are exact.
            assert {"PATH", "LANG", "CHILD_TOKEN"} <= names
            assert "OPENAI_API_KEY" not in names


async def test_each_spawn_gets_its_own_environment_through_a_reused_guard() -> None:
    """A warm guard decodes an unchanged environment once; a changed one must still arrive."""
    script = "import os; print(os.environ.get('SUBAGENT_CORE_TEST_VALUE'))"
    seen: list[bytes] = []
    with anyio.fail_after(20):
        for value in ("one", "one", "two", None, "one"):
            env = {"PATH": os.environ.get("PATH", "")}
            if value is not None:
                env["SUBAGENT_CORE_TEST_VALUE"] = value
            async with open_managed_process(
                [sys.executable, "-c", script], env=env, stdin="devnull"
            ) as proc:
                seen.append(await read_line(proc))
    assert seen == [b"one", b"one", b"two", b"None", b"one"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guard server is Linux's")
async def test_an_idle_reused_guard_leaves_the_last_runs_workspace(tmp_path: Path) -> None:
    """An idle guard must not pin the directory a finished run worked in (an unmount, a
    removed worktree): between runs its cwd is `/`."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # The child stays until its stdin closes (the ladder's first step, on leaving the block):
    # had it exited at once, the guard could be idle at `/` before its cwd was read.
    script = "import os, sys; print(os.getppid(), flush=True); sys.stdin.read()"
    with anyio.fail_after(20):
        async with open_managed_process([sys.executable, "-c", script], cwd=workspace) as proc:
            guard = psutil.Process(int(await read_line(proc)))
            assert guard.cwd() == str(workspace)
        # The guard reported the tree gone, then goes idle for the next spawn.
        await poll_until(lambda: guard.cwd() != str(workspace))
    assert guard.is_running()
    assert guard.cwd() == "/"


def write_file(path: Path, mode: int) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    path.chmod(mode)
    return path


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("missing program", "not-found"),
        ("non-executable file", "not-executable"),
        ("missing cwd", "bad-cwd"),
        ("cwd is a file", "bad-cwd"),
        ("empty argv", "not-found"),
    ],
)
async def test_spawn_failures_raise_spawn_error_before_anything_runs(
    tmp_path: Path, process_leak_guard: list[int], case: str, reason: str
) -> None:
    argv = [sys.executable, "-c", "pass"]
    cwd: Path | None = None
    if case == "missing program":
        argv = [str(tmp_path / "no-such-program")]
    elif case == "non-executable file":
        argv = [str(write_file(tmp_path / "script.sh", stat.S_IRUSR | stat.S_IWUSR))]
    elif case == "missing cwd":
        cwd = tmp_path / "no-such-dir"
    elif case == "cwd is a file":
        cwd = write_file(tmp_path / "plain.txt", 0o644)
    else:
        argv = []
    with anyio.fail_after(10):
        with pytest.raises(SpawnError) as caught:
            async with open_managed_process(argv, cwd=cwd):
                pytest.fail("the block must not run")
    assert caught.value.reason == reason
    assert str(caught.value) == f"could not start the process ({reason})"
    assert process_leak_guard == []  # nothing was spawned


async def test_a_missing_program_on_path_is_not_found(process_leak_guard: list[int]) -> None:
    with anyio.fail_after(10), pytest.raises(SpawnError) as caught:
        async with open_managed_process(["subagent-core-no-such-program-on-path"]):
            pytest.fail("the block must not run")
    assert caught.value.reason == "not-found"
    assert isinstance(caught.value.__cause__, FileNotFoundError)
    assert process_leak_guard == []
