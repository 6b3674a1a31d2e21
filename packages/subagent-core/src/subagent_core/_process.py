"""Managed child processes: one owner, one containment mechanism, observed exit facts.

Every provider, MCP stdio server, terminal and `process_execute` run children through
`open_managed_process`, so the rules are the same everywhere: argv only, a new session, stdin
piped or /dev/null, stdout piped, stderr inherited, piped (the caller drains it) or a file,
and on exit the ladder close stdin → EOF grace → SIGTERM the tree → TERM grace → SIGKILL the
tree → KILL grace.

Containment (the tree a run can never escape from):

- Linux: the child is started by its own guard (`subagent_core.guard`), a child subreaper, so
  every descendant — `setsid`, double fork, cleared environment — stays below it; the tree is
  gone exactly when the guard has no children. The guard SIGKILLs the tree when this process
  hangs up or dies by any signal. Exit and "tree gone" arrive as messages: no thread, no poll.
- macOS and other POSIX: the process group plus descendants reached through parent links
  (snapshotted while the leader lives). Weaker: a daemon that left the group after its parent
  died is not found, and nothing outlives a SIGKILLed owner to clean up.
- Windows: a Job Object with kill-on-close owns the child and everything it starts.

API for owners (fixed for the life of a spawn: argv, env, cwd and the stdio modes):
`await proc.wait()` returns when the *leader* exits (descendants may hold its pipes open),
`proc.outcome` is its exit facts once known, `proc.tree_alive()` says whether any member
lives, `await proc.wait_tree_gone()` waits until none does, and `await proc.terminate(...)`
runs the ladder and returns True only when nothing of the tree is alive.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal, Protocol

import anyio
import anyio.abc

from ._channel import ChildChannel
from ._process_tree import (
    ProcessTree,
    leader_pgid,
    release_job,
    signal_name,
    spawn_options,
    started,
)

_log = logging.getLogger("subagent_core")

StdinMode = Literal["pipe", "devnull"]
StdoutMode = Literal["pipe", "devnull"]
StderrMode = Literal["inherit", "pipe", "devnull"]

DEFAULT_EOF_GRACE_SECONDS = 0.5
"""A cooperative child exits on EOF within milliseconds; real agents ignore EOF entirely."""
DEFAULT_TERM_GRACE_SECONDS = 0.5
"""Time to flush and exit on SIGTERM; a settled run has no work left worth waiting for."""
DEFAULT_KILL_GRACE_SECONDS = 3.0
"""Only bounds the wait for the kernel to reap a SIGKILLed tree; normally milliseconds."""

_POLL_FIRST_SECONDS = 0.002
_POLL_MAX_SECONDS = 0.05
_RELEASE_SECONDS = 1.0
_ABORT_SECONDS = 3.0

# Test seam: called with the leader pid (= its process group on POSIX) of every spawn, so leak
# guards can check each group afterwards while the real spawn code runs unchanged.
spawn_listeners: list[Callable[[int], None]] = []


class SpawnError(Exception):
    """The process could not be started; nothing is running.

    `reason` is one of `not-found`, `not-executable`, `bad-cwd`, `os-error`: closed values a
    caller may put in safe text. The OS error, when there is one, stays in `__cause__`.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"could not start the process ({reason})")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """How the leader ended: an exit code, or the name of the signal that killed it.

    Both are `None` only when the leader's end could not be observed (its guard was killed).
    """

    exit_code: int | None
    signal: str | None


def _outcome(returncode: int) -> ProcessOutcome:
    name = signal_name(returncode)
    return ProcessOutcome(None, name) if name is not None else ProcessOutcome(returncode, None)


_UNKNOWN = ProcessOutcome(None, None)


class _Guarded(Protocol):
    """What `ManagedProcess` uses of a guarded process (see `_containment.GuardedProcess`)."""

    @property
    def exit_known(self) -> bool: ...

    async def wait_exit(self) -> int | None: ...

    def tree_gone(self) -> bool: ...

    async def wait_tree_gone(self) -> bool: ...

    def signal_tree(self, step: str) -> None: ...

    def release(self) -> None: ...


class ManagedProcess:
    """A running child and its tree; owned by the `open_managed_process` block."""

    def __init__(
        self,
        process: anyio.abc.Process,
        tree: ProcessTree | None,
        *,
        eof_floor_seconds: float = 0.0,
    ) -> None:
        self._process = process
        # Every ladder of a remote child waits at least this long after EOF, so its remote
        # guard finishes first (`ChildCommand.local_eof_grace`).
        self._eof_floor_seconds = eof_floor_seconds
        self._guarded = _guarded_of(process)
        self._tree = tree
        self._terminated = False
        self._terminate_lock: anyio.Lock | None = None
        """Made by the first ladder that runs: most trees are reported gone before any."""

    @property
    def pid(self) -> int:
        """The leader's pid (its process group id on POSIX)."""
        return self._process.pid

    @property
    def pgid(self) -> int | None:
        """The process group recorded at spawn (`None` on Windows)."""
        return leader_pgid(self._process.pid)

    @property
    def stdin(self) -> anyio.abc.ByteSendStream | None:
        return self._process.stdin

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream | None:
        return self._process.stdout

    @property
    def stderr(self) -> anyio.abc.ByteReceiveStream | None:
        return self._process.stderr

    @property
    def outcome(self) -> ProcessOutcome | None:
        """The leader's exit facts once it has been reaped, else `None`."""
        code = self._process.returncode
        if code is not None:
            return _outcome(code)
        if self._guarded is not None and self._guarded.exit_known:
            return _UNKNOWN
        return None

    @property
    def raw(self) -> anyio.abc.Process:
        """The underlying process object (`send_signal` reaches the leader alone)."""
        return self._process

    def send_signal(self, signum: signal.Signals) -> None:
        """Signals the leader alone (tests and adapters; teardown uses `terminate`)."""
        self._process.send_signal(signum)

    async def wait(self) -> ProcessOutcome:
        """Waits for the leader to exit and returns its facts; descendants may live on.

        This is the "the child exited" signal for protocol clients: it returns even while a
        grandchild holds stdout open, so a client can fail its waiters without waiting for EOF.
        """
        if self._guarded is not None:
            code = await self._guarded.wait_exit()
            return _UNKNOWN if code is None else _outcome(code)
        return _outcome(await self._process.wait())

    def tree_alive(self) -> bool:
        """True while any member of the tree is alive (zombies count as gone)."""
        if self._guarded is not None:
            return not self._guarded.tree_gone()
        if self._process.returncode is None:
            return True
        assert self._tree is not None
        return bool(self._tree.alive())

    def snapshot(self) -> None:
        """Records current descendants where the tree is tracked by snapshots (not Linux)."""
        if self._tree is not None:
            self._tree.snapshot()

    async def close_stdin(self) -> None:
        """Sends EOF; a dead pipe is fine.

        Where the tree is tracked by snapshots, it is snapshotted first: a leader that exits on
        EOF orphans its descendants, which can only be found through it while it lives.
        """
        if self._tree is not None and self._process.returncode is None:
            self._tree.snapshot()
        stdin = self._process.stdin
        if stdin is not None:
            try:
                await stdin.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    async def terminate(
        self,
        eof_grace_seconds: float = DEFAULT_EOF_GRACE_SECONDS,
        term_grace_seconds: float = DEFAULT_TERM_GRACE_SECONDS,
        kill_grace_seconds: float = DEFAULT_KILL_GRACE_SECONDS,
    ) -> bool:
        """Runs the ladder; True when the tree is confirmed gone.

        Shielded and bounded by the graces: a cancelled caller cannot skip the cleanup. Once the
        tree is confirmed gone, later calls return True at once; so does a first call when the
        guard already reported the tree gone and there is no stdin to close (nothing to do).
        """
        if self.confirmed_gone():
            return True
        with anyio.CancelScope(shield=True):
            if self._terminate_lock is None:
                self._terminate_lock = anyio.Lock()
            async with self._terminate_lock:
                if not self._terminated:
                    self._terminated = await self._ladder(
                        max(eof_grace_seconds, self._eof_floor_seconds),
                        term_grace_seconds,
                        kill_grace_seconds,
                    )
        return self._terminated

    def confirmed_gone(self) -> bool:
        """True once the ladder confirmed the tree gone, or the guard reported it gone with no
        stdin left to close (then the ladder has no step to take)."""
        if not self._terminated and self._guarded is not None and self._process.stdin is None:
            self._terminated = self._guarded.tree_gone()
        return self._terminated

    async def _ladder(self, eof: float, term: float, kill: float) -> bool:
        self.snapshot()
        await self.close_stdin()
        if await self._wait_gone(eof):
            return True
        _log.debug("process %d outlived its EOF grace; sending SIGTERM", self.pid)
        self.signal_tree("term")
        if await self._wait_gone(term):
            return True
        _log.debug("process %d outlived its TERM grace; sending SIGKILL", self.pid)
        self.signal_tree("kill")
        if await self._wait_gone(kill):
            return True
        _log.warning("process tree of %d is not gone after SIGKILL", self.pid)
        return False

    def signal_tree(self, step: Literal["term", "kill"]) -> None:
        """Sends SIGTERM or SIGKILL to every live member of the tree now, outside the ladder.

        For an owner that relays another owner's steps (a node host carrying out its
        driver's ladder); an owner of its own child leaves the steps to `terminate`.
        """
        if self._guarded is not None:
            self._guarded.signal_tree(step)
        else:
            assert self._tree is not None
            self._tree.signal(step)

    async def wait_tree_gone(self) -> bool:
        """Waits until no member of the tree is alive (True); False when that can no longer
        be learnt (the guard was killed). Unbounded: the caller bounds it."""
        return await self._wait_gone(math.inf)

    async def _wait_gone(self, seconds: float) -> bool:
        """Waits (never spins) until leader and tree are gone, for at most `seconds` in all."""
        if self._guarded is not None:
            with anyio.move_on_after(seconds):
                await self._guarded.wait_tree_gone()
            return self._guarded.tree_gone()
        assert self._tree is not None
        deadline = anyio.current_time() + seconds
        with anyio.move_on_after(seconds):
            await self._process.wait()
        if self._process.returncode is None:
            return False
        delay = _POLL_FIRST_SECONDS
        while self._tree.alive():
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                return False
            await anyio.sleep(min(delay, remaining))
            delay = min(delay * 2, _POLL_MAX_SECONDS)
        return True


def _check_cwd(cwd: Path | None) -> None:
    if cwd is not None and not os.path.isdir(cwd):
        raise SpawnError("bad-cwd")


def _classify_os_error(error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return "not-found"
    if isinstance(error, PermissionError):
        return "not-executable"
    if isinstance(error, NotADirectoryError):
        return "bad-cwd"
    return "os-error"


_STDIO = {"pipe": subprocess.PIPE, "devnull": subprocess.DEVNULL, "inherit": None}


@asynccontextmanager
async def open_local(
    argv: Sequence[str],
    *,
    cwd: Path | str | None,
    env: Mapping[str, str] | None,
    stdin: StdinMode,
    stdout: StdoutMode,
    stderr: StderrMode | int | IO[bytes],
    eof_grace_seconds: float,
    term_grace_seconds: float,
    kill_grace_seconds: float,
    eof_floor_seconds: float = 0.0,
) -> AsyncGenerator[ManagedProcess]:
    """`open_managed_process` of an argv on this host; `eof_floor_seconds` raises every
    ladder's EOF grace (a local ssh client waits for its remote guard)."""
    cwd_path = cwd if cwd is None or isinstance(cwd, Path) else Path(cwd)
    if not argv:
        raise SpawnError("not-found")
    if _guard_available():
        # The guard's own `chdir` refuses a bad cwd before anything runs.
        process = await _spawn_guarded(argv, cwd_path, env, stdin, stdout, stderr)
        tree = None
    else:
        _check_cwd(cwd_path)
        stderr_arg = _STDIO[stderr] if isinstance(stderr, str) else stderr
        process, job = await _spawn_direct(argv, cwd_path, env, stdin, stdout, stderr_arg)
        tree = ProcessTree(process.pid, leader_pgid(process.pid), job)
    # No await between the spawn and the block: a cancel in that gap would leak the process.
    async with own_process(
        process,
        tree,
        eof_floor_seconds=eof_floor_seconds,
        eof_grace_seconds=eof_grace_seconds,
        term_grace_seconds=term_grace_seconds,
        kill_grace_seconds=kill_grace_seconds,
    ) as managed:
        for listener in spawn_listeners:
            listener(process.pid)
        yield managed


@asynccontextmanager
async def own_process(
    process: anyio.abc.Process,
    tree: ProcessTree | None,
    *,
    eof_floor_seconds: float,
    eof_grace_seconds: float,
    term_grace_seconds: float,
    kill_grace_seconds: float,
) -> AsyncGenerator[ManagedProcess]:
    """Owns a started process (local, guarded, or a placement's channel) until its tree is
    gone: the ladder on the way out (shielded, bounded), then our ends are released."""
    managed = ManagedProcess(process, tree, eof_floor_seconds=eof_floor_seconds)
    try:
        yield managed
    finally:
        guarded = _guarded_of(process)
        if guarded is not None and managed.confirmed_gone():
            guarded.release()  # nothing to wait for: no ladder, no shield, no yield
        else:
            with anyio.CancelScope(shield=True):
                await managed.terminate(eof_grace_seconds, term_grace_seconds, kill_grace_seconds)
                await _release(process)
                if tree is not None:
                    release_job(tree.job)


async def _spawn_direct(
    argv: Sequence[str],
    cwd: Path | None,
    env: Mapping[str, str] | None,
    stdin: StdinMode,
    stdout: StdoutMode,
    stderr: int | IO[bytes] | None,
) -> tuple[anyio.abc.Process, int | None]:
    # Shielded: a cancel landing inside the spawn would otherwise lose the new process before
    # the block owns it (asyncio kills only the leader then). The spawn itself is bounded.
    process: anyio.abc.Process | None = None
    job: int | None = None
    with anyio.CancelScope(shield=True):
        try:
            process = await anyio.open_process(
                list(argv),
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=_STDIO[stdin],
                stdout=_STDIO[stdout],
                stderr=stderr,
                **spawn_options(),
            )
        except OSError as error:
            raise SpawnError(_classify_os_error(error)) from error
        try:
            job = started(process.pid)
        except OSError as error:
            process.kill()
            await process.aclose()
            raise SpawnError("os-error") from error
    assert process is not None
    return process, job


async def _release(process: anyio.abc.Process) -> None:
    """Closes our pipe ends, so no transport outlives the block (bounded, never raises).

    `Process.aclose()` also closes the OS pipes: a reader paused on a full buffer (a child that
    flooded stdout nobody read) would otherwise keep its transport open forever. For a
    directly spawned process it waits for the leader, so it is only used once that is reaped.
    """
    guarded = _guarded_of(process)
    if guarded is not None:
        # Our pipe ends close and the guard is recycled or hung up on: no wait, no yield.
        guarded.release()
        return
    if process.returncode is not None:
        with anyio.move_on_after(_RELEASE_SECONDS):
            try:
                await process.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
        return
    _log.warning("process %d was not reaped", process.pid)
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            try:
                await stream.aclose()
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass


if sys.platform == "win32":

    def _guard_available() -> bool:
        """No guard on Windows: a Job Object contains the tree."""
        return False

    def _guarded_of(process: anyio.abc.Process) -> _Guarded | None:
        return process if isinstance(process, ChildChannel) else None

    async def _spawn_guarded(
        argv: Sequence[str],
        cwd: Path | None,
        env: Mapping[str, str] | None,
        stdin: StdinMode,
        stdout: StdoutMode,
        stderr: StderrMode | int | IO[bytes],
    ) -> anyio.abc.Process:
        raise SpawnError("os-error")

else:
    from . import _containment, _guard_server

    def _guard_available() -> bool:
        return _guard_server.available()

    def _guarded_of(process: anyio.abc.Process) -> _Guarded | None:
        if isinstance(process, _containment.GuardedProcess | ChildChannel):
            return process
        return None

    async def _spawn_guarded(
        argv: Sequence[str],
        cwd: Path | None,
        env: Mapping[str, str] | None,
        stdin: StdinMode,
        stdout: StdoutMode,
        stderr: StderrMode | int | IO[bytes],
    ) -> anyio.abc.Process:
        stderr_fd = stderr if isinstance(stderr, str | int) else stderr.fileno()
        try:
            return await _containment.spawn_guarded(
                argv,
                cwd=cwd,
                env=env,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr_fd,
                abort_seconds=_ABORT_SECONDS,
            )
        except _containment.GuardRefusedError as error:
            raise SpawnError(error.reason) from error.os_error
        except OSError as error:
            raise SpawnError("os-error") from error
