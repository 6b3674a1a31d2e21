"""Managed child processes: one owner, a whole-tree teardown ladder, observed exit facts.

Every provider and `process_execute` run children through `open_managed_process`, so the rules
are the same everywhere: argv only, a new process group, stdin piped or /dev/null, stdout piped,
stderr inherited, piped (the caller drains it) or a file, and on exit the ladder
close stdin → EOF grace → SIGTERM the tree → TERM grace → SIGKILL the tree → KILL grace.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

import anyio
import anyio.abc

from ._process_tree import ProcessTree, leader_pgid, signal_name, spawn_options

_log = logging.getLogger("subagent_core")

StdinMode = Literal["pipe", "devnull"]
StdoutMode = Literal["pipe", "devnull"]
StderrMode = Literal["inherit", "pipe", "devnull"]

DEFAULT_EOF_GRACE_SECONDS = 6.0
DEFAULT_TERM_GRACE_SECONDS = 3.0
DEFAULT_KILL_GRACE_SECONDS = 3.0

_POLL_FIRST_SECONDS = 0.002
_POLL_MAX_SECONDS = 0.05
_RELEASE_SECONDS = 1.0

# Test seam: called with the leader pid (= its process group on POSIX) of every spawn, so leak
# guards can check each group afterwards while the real spawn code runs unchanged.
spawn_listeners: list[Callable[[int], None]] = []


class SpawnError(Exception):
    """The process could not be started; nothing is running.

    `reason` is one of `not-found`, `not-executable`, `bad-cwd`, `os-error`: closed values a
    caller may put in safe text. The OS error stays in `__cause__`.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"could not start the process ({reason})")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """How the leader ended: an exit code, or the name of the signal that killed it."""

    exit_code: int | None
    signal: str | None


def _outcome(returncode: int) -> ProcessOutcome:
    name = signal_name(returncode)
    return ProcessOutcome(None, name) if name is not None else ProcessOutcome(returncode, None)


class ManagedProcess:
    """A running child and its tree; owned by the `open_managed_process` block."""

    def __init__(self, process: anyio.abc.Process, tree: ProcessTree) -> None:
        self._process = process
        self._tree = tree
        self._terminated = False
        self._terminate_lock = anyio.Lock()

    @property
    def pid(self) -> int:
        """The leader's pid (its process group id on POSIX)."""
        return self._process.pid

    @property
    def pgid(self) -> int | None:
        """The process group recorded at spawn (`None` on Windows)."""
        return self._tree.pgid

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
        return None if code is None else _outcome(code)

    @property
    def raw(self) -> anyio.abc.Process:
        """The underlying anyio process (for adapters that need its streams)."""
        return self._process

    async def wait(self) -> ProcessOutcome:
        """Waits for the leader to exit (descendants may live on) and returns its facts."""
        code = await self._process.wait()
        return _outcome(code)

    def tree_alive(self) -> bool:
        """True while any member of the tree is alive (zombies count as gone)."""
        if self._process.returncode is None:
            return True
        return bool(self._tree.alive())

    def snapshot(self) -> None:
        """Records current descendants, so later escapees are still signalled."""
        self._tree.snapshot()

    async def close_stdin(self) -> None:
        """Sends EOF; a dead pipe is fine.

        The tree is snapshotted first: a leader that exits on EOF orphans its descendants, and
        one that called `setsid` can only be found through the leader while the leader lives.
        """
        if self._process.returncode is None:
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
        tree is confirmed gone, later calls return True at once.
        """
        with anyio.CancelScope(shield=True):
            async with self._terminate_lock:
                if not self._terminated:
                    self._terminated = await self._ladder(
                        eof_grace_seconds, term_grace_seconds, kill_grace_seconds
                    )
        return self._terminated

    async def _ladder(self, eof: float, term: float, kill: float) -> bool:
        self._tree.snapshot()
        await self.close_stdin()
        if await self._wait_gone(eof):
            return True
        _log.debug("process %d outlived its EOF grace; sending SIGTERM", self.pid)
        self._tree.signal("term")
        if await self._wait_gone(term):
            return True
        _log.debug("process %d outlived its TERM grace; sending SIGKILL", self.pid)
        self._tree.signal("kill")
        if await self._wait_gone(kill):
            return True
        _log.warning("process tree of %d is not gone after SIGKILL", self.pid)
        return False

    async def _wait_gone(self, seconds: float) -> bool:
        """Waits (never spins) until leader and tree are gone, for at most `seconds` in all."""
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


def _check_spawnable(argv: Sequence[str], cwd: Path | None) -> None:
    if not argv:
        raise SpawnError("not-found")
    if cwd is not None and not Path(cwd).is_dir():
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
async def open_managed_process(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: StdinMode = "pipe",
    stdout: StdoutMode = "pipe",
    stderr: StderrMode | int | IO[bytes] = "inherit",
    eof_grace_seconds: float = DEFAULT_EOF_GRACE_SECONDS,
    term_grace_seconds: float = DEFAULT_TERM_GRACE_SECONDS,
    kill_grace_seconds: float = DEFAULT_KILL_GRACE_SECONDS,
) -> AsyncGenerator[ManagedProcess]:
    """Starts `argv` in its own process group and owns it until the whole tree is gone.

    Leaving the block runs the ladder with the given graces (shielded; a no-op when `terminate`
    already confirmed the tree gone) and closes the pipes.

    Raises:
        SpawnError: missing program, not executable, or bad cwd; raised before anything runs.
    """
    cwd_path = None if cwd is None else Path(cwd)
    _check_spawnable(argv, cwd_path)
    stderr_arg = _STDIO[stderr] if isinstance(stderr, str) else stderr
    try:
        process = await anyio.open_process(
            list(argv),
            cwd=cwd_path,
            env=dict(env) if env is not None else None,
            stdin=_STDIO[stdin],
            stdout=_STDIO[stdout],
            stderr=stderr_arg,
            **spawn_options(),
        )
    except OSError as error:
        raise SpawnError(_classify_os_error(error)) from error
    # No await between the spawn and the try: a cancel in that gap would leak the process.
    managed = ManagedProcess(process, ProcessTree(process.pid, leader_pgid(process.pid)))
    try:
        for listener in spawn_listeners:
            listener(process.pid)
        yield managed
    finally:
        with anyio.CancelScope(shield=True):
            await managed.terminate(eof_grace_seconds, term_grace_seconds, kill_grace_seconds)
            await _release_pipes(process)


async def _release_pipes(process: anyio.abc.Process) -> None:
    """Closes our pipe ends, so no transport outlives the block (bounded, never raises).

    `Process.aclose()` also closes the OS pipes: a reader paused on a full buffer (a child that
    flooded stdout nobody read) would otherwise keep its transport open forever. It waits for
    the leader, so it is only used once the leader is reaped.
    """
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
