"""Client terminals: commands the parent runs for the child, as managed processes of its own.

Each terminal is a `subagent_core` managed process (argv, never a shell; scrubbed env plus the
child's explicit variables; its own contained tree) owned by a task in the child's terminals
task group, so every terminal dies with the child (before its ladder). Output (stdout and stderr, interleaved as read) keeps
its newest `output_byte_limit` bytes, capped at `MAX_TERMINAL_OUTPUT_BYTES`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio
import anyio.abc
from subagent_core.kit import (
    ChildCommand,
    ProcessOutcome,
    SpawnError,
    Teardown,
    open_managed_process,
)

_log = logging.getLogger("subagent_acp")

MAX_TERMINALS: Final = 16
"""Terminals one run may hold at a time (released ones do not count)."""

MAX_TERMINAL_OUTPUT_BYTES: Final = 1024 * 1024
"""Most output a terminal keeps (its newest bytes), whatever the child asks for."""

# The EOF grace is short: stdin is /dev/null, so there is nothing to flush on EOF.
_TEARDOWN: Final = Teardown(eof_grace_seconds=0.05, term_grace_seconds=1.0, kill_grace_seconds=2.0)
LADDER_SECONDS: Final = _TEARDOWN.total_seconds
"""The longest a terminal's ladder takes once it is told to stop."""
_READ_BYTES: Final = 65536


class TerminalRefusal(Exception):
    """A refused terminal request; the message is fixed text, safe to send to the child."""


UNKNOWN_TERMINAL: Final = "unknown terminal"
TOO_MANY: Final = "too many terminals"
BAD_COMMAND: Final = "the command could not be started"
OUTSIDE: Final = "cwd is outside the workspace"


@dataclass(slots=True, eq=False)
class _Terminal:
    limit: int
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    outcome: ProcessOutcome | None = None
    exited: anyio.Event = field(default_factory=anyio.Event)
    stop: anyio.Event = field(default_factory=anyio.Event)
    released: bool = False

    def append(self, data: bytes) -> None:
        self.output += data
        excess = len(self.output) - self.limit
        if excess > 0:
            del self.output[:excess]
            # Never start inside a UTF-8 sequence.
            while self.output and (self.output[0] & 0xC0) == 0x80:
                del self.output[:1]
            self.truncated = True

    def text(self) -> str:
        return self.output.decode("utf-8", "replace")


class Terminals:
    """The child's terminals; `close()` (or cancelling the task group) ends them all."""

    def __init__(self, task_group: anyio.abc.TaskGroup, workspace: Path) -> None:
        self._tg = task_group
        self._workspace = os.path.realpath(workspace)
        self._terminals: dict[str, _Terminal] = {}
        self._next = 0

    async def create(
        self,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
        output_byte_limit: int | None,
    ) -> str:
        """Starts the command; returns its terminal id.

        Raises:
            TerminalRefusal: too many terminals, a cwd outside the workspace, or a command that
                could not be started.
        """
        if sum(not t.released for t in self._terminals.values()) >= MAX_TERMINALS:
            raise TerminalRefusal(TOO_MANY)
        workdir = await anyio.to_thread.run_sync(self._confine, cwd)
        try:
            spec = ChildCommand(command=command, args=tuple(args), env=dict(env), cwd=workdir)
        except ValueError:
            raise TerminalRefusal(BAD_COMMAND) from None
        limit = MAX_TERMINAL_OUTPUT_BYTES
        if output_byte_limit is not None and output_byte_limit >= 0:
            limit = min(limit, output_byte_limit)
        terminal = _Terminal(limit=limit)
        try:
            await self._tg.start(self._own, terminal, spec)
        except SpawnError as error:
            _log.info("a client terminal could not be started (%s)", error.reason)
            raise TerminalRefusal(BAD_COMMAND) from None
        self._next += 1
        terminal_id = f"term-{self._next}"
        self._terminals[terminal_id] = terminal
        return terminal_id

    def output(self, terminal_id: str) -> tuple[str, bool, ProcessOutcome | None]:
        """The kept output, whether older output was dropped, and the exit facts if exited."""
        terminal = self._get(terminal_id)
        return terminal.text(), terminal.truncated, terminal.outcome

    async def wait_for_exit(self, terminal_id: str) -> ProcessOutcome | None:
        """Waits until the command has exited (or was killed)."""
        terminal = self._get(terminal_id)
        await terminal.exited.wait()
        return terminal.outcome

    async def kill(self, terminal_id: str) -> None:
        """Ends the command's whole tree; the terminal keeps its output and exit facts."""
        terminal = self._get(terminal_id)
        terminal.stop.set()
        await terminal.exited.wait()

    async def release(self, terminal_id: str) -> None:
        """Kills the command if it still runs and forgets the terminal."""
        terminal = self._get(terminal_id)
        terminal.released = True
        terminal.stop.set()
        del self._terminals[terminal_id]

    def close(self) -> None:
        """Stops every terminal (their ladders run in the task group)."""
        for terminal in self._terminals.values():
            terminal.stop.set()

    def _get(self, terminal_id: str) -> _Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None:
            raise TerminalRefusal(UNKNOWN_TERMINAL)
        return terminal

    def _confine(self, cwd: str | None) -> Path:
        if cwd is None:
            return Path(self._workspace)
        if "\x00" in cwd or not os.path.isabs(cwd):
            raise TerminalRefusal(OUTSIDE)
        real = os.path.realpath(cwd)
        root = self._workspace
        if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
            raise TerminalRefusal(OUTSIDE)
        return Path(real)

    async def _own(
        self,
        terminal: _Terminal,
        spec: ChildCommand,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            async with open_managed_process(
                spec, stdin="devnull", stderr="pipe", teardown=_TEARDOWN
            ) as proc:
                task_status.started()
                async with anyio.create_task_group() as pumps:
                    for stream in (proc.stdout, proc.stderr):
                        if stream is not None:
                            pumps.start_soon(_pump, stream, terminal)

                    async def watch_exit() -> None:
                        terminal.outcome = await proc.wait()
                        terminal.exited.set()

                    pumps.start_soon(watch_exit)
                    await terminal.stop.wait()
                    pumps.cancel_scope.cancel()
                with anyio.CancelScope(shield=True):
                    await proc.terminate(
                        _TEARDOWN.eof_grace_seconds,
                        _TEARDOWN.term_grace_seconds,
                        _TEARDOWN.kill_grace_seconds,
                    )
                terminal.outcome = proc.outcome
        finally:
            terminal.exited.set()


async def _pump(stream: anyio.abc.ByteReceiveStream, terminal: _Terminal) -> None:
    while True:
        try:
            data = await stream.receive(_READ_BYTES)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return
        terminal.append(data)
