"""Placements: where a child runs, behind one shape the providers already drive.

A provider builds a `ChildCommand` and calls `open_managed_process(command, …)`; the command's
`remote` (a `Placement`, `None` for this host) opens the child and hands back a
`ManagedProcess`: stdin/stdout byte streams, `wait()` → `ProcessOutcome`, the terminate
ladder. So a provider never knows whether its child runs here, over ssh, or on a cluster.

Two ways to build a placement:

- Turn the command into a local argv that runs it elsewhere under a guard (`SSHRemote`): its
  `open` runs that argv as a local managed process, with an EOF floor so the remote guard's
  ladder ends first.
- Reach the child some other way (`subagent-ray`): implement `ChildChannel` — the messages a
  guard reports (exit, tree gone) and obeys (term, kill) — and own it with
  `open_channel_process`, which runs the same ladder over it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import IO, Literal, Protocol, runtime_checkable

from ._channel import ChildChannel
from ._environment import child_env
from ._process import ManagedProcess, open_local, own_process

PlacementStdin = Literal["pipe", "devnull"]
PlacementStdout = Literal["pipe", "devnull"]
PlacementStderr = Literal["inherit", "pipe", "devnull"] | int | IO[bytes]


@runtime_checkable
class Placement(Protocol):
    """Where a child runs: opens it and owns it for the block, like `open_managed_process`.

    `open` yields once the child is started and, on leaving the block (shielded, bounded by
    the graces), runs the ladder: close stdin → EOF grace → SIGTERM the tree → TERM grace →
    SIGKILL → KILL grace. A start failure raises `SpawnError` before the block is entered,
    with nothing left running.
    """

    def check_env(self, env: Mapping[str, str | None]) -> None:
        """Refuses env names this placement cannot carry (`ValueError`, never echoing values)."""
        ...

    def open(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None],
        cwd: Path | None,
        stdin: PlacementStdin,
        stdout: PlacementStdout,
        stderr: PlacementStderr,
        eof_grace_seconds: float,
        term_grace_seconds: float,
        kill_grace_seconds: float,
    ) -> AbstractAsyncContextManager[ManagedProcess]:
        """Starts `argv` where this placement runs children and owns it for the block.

        `env` is the command's explicit overlay (`ChildCommand.env`, laid over the scrubbed
        environment of this process: `child_env`); `cwd` applies where the child runs."""
        ...


@asynccontextmanager
async def open_channel_process(
    channel: ChildChannel,
    *,
    eof_floor_seconds: float,
    eof_grace_seconds: float,
    term_grace_seconds: float,
    kill_grace_seconds: float,
) -> AsyncGenerator[ManagedProcess]:
    """Owns a started `channel` as a `ManagedProcess` until its tree is gone.

    The block must be entered right after the channel exists (no `await` in between).
    `eof_floor_seconds`: the least EOF grace of any ladder, so the far guard's own ladder ends
    before this side signals. Leaving runs the ladder (shielded, bounded) and releases.
    """
    async with own_process(
        channel,
        None,
        eof_floor_seconds=eof_floor_seconds,
        eof_grace_seconds=eof_grace_seconds,
        term_grace_seconds=term_grace_seconds,
        kill_grace_seconds=kill_grace_seconds,
    ) as managed:
        yield managed


class LocalPlacement:
    """This host: the child is a local managed process (what `remote=None` means)."""

    __slots__ = ()

    def check_env(self, env: Mapping[str, str | None]) -> None:
        """Any env `ChildCommand` accepts runs here."""

    def open(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None],
        cwd: Path | None,
        stdin: PlacementStdin,
        stdout: PlacementStdout,
        stderr: PlacementStderr,
        eof_grace_seconds: float,
        term_grace_seconds: float,
        kill_grace_seconds: float,
    ) -> AbstractAsyncContextManager[ManagedProcess]:
        """`open_managed_process` of the argv itself, on this host."""
        return open_local(
            argv,
            cwd=cwd,
            env=child_env(env),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            eof_floor_seconds=0.0,
            eof_grace_seconds=eof_grace_seconds,
            term_grace_seconds=term_grace_seconds,
            kill_grace_seconds=kill_grace_seconds,
        )

    def __repr__(self) -> str:
        return "LocalPlacement()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LocalPlacement)

    def __hash__(self) -> int:
        return hash(LocalPlacement)
