"""`process_execute`: one shell command in the workspace, bounded in time, output and reach.

States of one call:

    validating → (invalid → failed) → starting → (spawn failed → failed) → running →
      exit 0 → completed | exit ≠ 0 → completed_nonzero | timeout → terminating → timed_out |
      parent cancel → terminating → cancelled | output/lifecycle failure → terminating → failed

A non-zero exit is a command result; invalid input, a spawn failure and an unavailable backend
are tool failures (plain text, `is_error`). When reasons race, cancel > timeout > output
failure > exit; the first committed reason stays (a late close only cleans up).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Literal

import anyio
import anyio.abc
import anyio.lowlevel
from subagent_core import CancelSignal, child_env
from subagent_core.kit import (
    ManagedProcess,
    ProcessOutcome,
    SpawnError,
    drain_ended,
    open_managed_process,
)

from ._output_buffer import HeadTailBuffer
from ._shell import shell_argv
from ._tool import RequestContext, ToolOutcome

_log = logging.getLogger("model_agent.process")

PROCESS_EXECUTE = "process_execute"

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000

ProcessState = Literal[
    "validating",
    "starting",
    "running",
    "terminating",
    "completed",
    "completed_nonzero",
    "timed_out",
    "cancelled",
    "failed",
]
"""The states a call passes through; the last one is its `status` (or `failed`)."""

_Reason = Literal["cancel", "timeout", "output", "exit"]
_RANK: dict[_Reason, int] = {"cancel": 0, "timeout": 1, "output": 2, "exit": 3}
_STATUS: dict[_Reason, ProcessState] = {
    "cancel": "cancelled",
    "timeout": "timed_out",
    "output": "failed",
    "exit": "completed",
}

_RESULT_ENCODER = json.JSONEncoder(ensure_ascii=False)

_READ_BYTES = 256 * 1024
"""One read of a pipe: the event loop's own read size, so a flood costs few wake-ups."""

QUIET_SECONDS = 0.01
"""How long a command runs before pump tasks read its output: a short command's output waits
in its pipes and is read once it has ended, with no task started for it."""

_NON_INTERACTIVE_POSIX: dict[str, str | None] = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "EDITOR": "true",
    "VISUAL": "true",
    "GIT_ASKPASS": None,
    "SSH_ASKPASS": None,
    "DEBIAN_FRONTEND": "noninteractive",
    "TERM": "dumb",
}
"""Pagers print straight through, editors and credential prompts end at once."""

_NON_INTERACTIVE_WINDOWS: dict[str, str | None] = {
    "PAGER": None,
    "GIT_PAGER": "",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": None,
    "EDITOR": None,
    "VISUAL": None,
    "GIT_ASKPASS": None,
    "SSH_ASKPASS": None,
}

_DESCRIPTION = (
    "Run one shell command in the workspace and return its exit code and output. "
    "stdin is empty; pagers and editors are disabled. Output keeps the first and last 16 KiB "
    "of each stream. `cwd` is relative to the workspace root. The command is killed with its "
    "whole process tree after `timeout_ms` (default 120000, at most 600000)."
)

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The shell command to run."},
        "cwd": {
            "type": "string",
            "description": "Working directory relative to the workspace root (default: the root).",
        },
        "timeout_ms": {
            "type": "integer",
            "minimum": 1,
            "description": "Timeout in milliseconds (default 120000, clamped to 600000).",
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class ProcessArguments:
    """Validated arguments of one call."""

    command: str
    cwd: str | None
    timeout_ms: int


class InvalidArgumentsError(ValueError):
    """The model's arguments break the schema; the message is fixed text."""


def parse_process_arguments(arguments: Mapping[str, Any]) -> ProcessArguments:
    """Validates `command`, `cwd` and `timeout_ms` and clamps the timeout to 600 000 ms.

    Raises:
        InvalidArgumentsError: the arguments are not acceptable.
    """
    unknown = sorted(set(arguments) - {"command", "cwd", "timeout_ms"})
    if unknown:
        raise InvalidArgumentsError(
            "invalid arguments: unknown argument(s); allowed: command, cwd, timeout_ms"
        )
    command = arguments.get("command")
    if not isinstance(command, str) or not command.strip():
        raise InvalidArgumentsError("invalid arguments: `command` must be a non-empty string")
    if "\0" in command:
        raise InvalidArgumentsError("invalid arguments: `command` must not contain NUL")
    cwd = arguments.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd or "\0" in cwd):
        raise InvalidArgumentsError(
            "invalid arguments: `cwd` must be a non-empty relative path string"
        )
    timeout = arguments.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if timeout is None:
        timeout = DEFAULT_TIMEOUT_MS
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
        raise InvalidArgumentsError("invalid arguments: `timeout_ms` must be an integer >= 1")
    return ProcessArguments(command, cwd, min(timeout, MAX_TIMEOUT_MS))


class WorkingDirectoryError(ValueError):
    """The requested working directory is refused; the message is fixed text."""


def workspace_identity(path: Path) -> tuple[int, int] | None:
    """(st_dev, st_ino) of `path`, or None when it cannot be read."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


def resolve_working_directory(workspace: Path, identity: tuple[int, int], cwd: str | None) -> Path:
    """The real directory a command runs in, decided by the working-directory table.

    Absent → the root; relative → resolved inside; absolute, escaping (`..` or a symlink),
    missing or not a directory → refused; the root's identity changed → refused. This keeps a
    request in its project; it is not a sandbox.

    Raises:
        WorkingDirectoryError: the directory is refused.
    """
    if workspace_identity(workspace) != identity:
        raise WorkingDirectoryError("cwd refused: the workspace changed since the request began")
    if cwd is None:
        return workspace
    if PurePosixPath(cwd).is_absolute() or PureWindowsPath(cwd).anchor:
        raise WorkingDirectoryError("cwd refused: it must be relative to the workspace root")
    real = Path(os.path.realpath(workspace / cwd))
    if real != workspace and workspace not in real.parents:
        raise WorkingDirectoryError("cwd refused: it leaves the workspace")
    if not real.exists():
        raise WorkingDirectoryError("cwd refused: it does not exist")
    if not real.is_dir():
        raise WorkingDirectoryError("cwd refused: it is not a directory")
    if workspace_identity(workspace) != identity:
        raise WorkingDirectoryError("cwd refused: the workspace changed since the request began")
    return real


def process_environment() -> dict[str, str]:
    """The child's environment: the scrubbed parent env with interactive helpers disabled."""
    explicit = _NON_INTERACTIVE_WINDOWS if sys.platform == "win32" else _NON_INTERACTIVE_POSIX
    return child_env(explicit)


def strongest(offered: Iterable[_Reason]) -> _Reason:
    """The reason that wins among those that ended the wait together: cancel > timeout >
    output > exit. It is committed once; later reasons only clean up."""
    return min(offered, key=_RANK.__getitem__)


class _Streams:
    """Both output captures, and how the pumps tell the call about an output failure or EOF."""

    __slots__ = ("drained", "failed", "open", "race", "stderr", "stdout")

    def __init__(self) -> None:
        self.stdout = HeadTailBuffer()
        self.stderr = HeadTailBuffer()
        self.open = 2
        self.failed = False
        self.race: anyio.CancelScope | None = None
        """The wait for the exit, which an output failure ends at once."""
        self.drained: anyio.Event | None = None
        """Made only when someone has to wait for EOF: usually both streams ended first."""

    def fail(self) -> None:
        self.failed = True
        if self.race is not None:
            self.race.cancel()

    def ended(self) -> None:
        self.open -= 1
        if self.open == 0 and self.drained is not None:
            self.drained.set()

    async def wait_drained(self) -> None:
        if self.open:
            if self.drained is None:
                self.drained = anyio.Event()
            await self.drained.wait()


class ProcessExecuteTool:
    """The `process_execute` tool: a command through the request's frozen shell.

    The graces bound teardown: `drain_grace_seconds` is how long output may keep flowing after
    the command's main process exited (a background job holding the pipe is then killed);
    `term_grace_seconds` and `kill_grace_seconds` are the SIGTERM → SIGKILL ladder steps.
    Each state a call enters is logged at DEBUG on the `model_agent.process` logger.
    """

    name = PROCESS_EXECUTE
    description = _DESCRIPTION
    parameters: Mapping[str, Any] = _PARAMETERS

    def __init__(
        self,
        *,
        drain_grace_seconds: float = 1.0,
        term_grace_seconds: float = 2.0,
        kill_grace_seconds: float = 2.0,
    ) -> None:
        self._drain_grace = drain_grace_seconds
        self._term_grace = term_grace_seconds
        self._kill_grace = kill_grace_seconds

    def _enter(self, state: ProcessState) -> None:
        _log.debug("process_execute state: %s", state)

    def _fail(self, text: str) -> ToolOutcome:
        self._enter("failed")
        return ToolOutcome(text, is_error=True)

    async def call(self, arguments: Mapping[str, Any], context: RequestContext) -> ToolOutcome:
        """Validates, runs and reports one command; never raises for command-level failure."""
        self._enter("validating")
        refusal = _gate(context)
        if refusal is not None:
            return self._fail(refusal)
        try:
            parsed = parse_process_arguments(arguments)
        except InvalidArgumentsError as error:
            return self._fail(str(error))
        shell = context.shell
        if shell is None:
            return self._fail("process_execute is unavailable: no shell was found")
        try:
            cwd = resolve_working_directory(
                context.workspace, context.workspace_identity, parsed.cwd
            )
        except WorkingDirectoryError as error:
            return self._fail(str(error))
        if context.cancel.cancelled or context.state != "active":
            return self._fail("process_execute refused: the request is no longer active")
        return await self._run(shell, parsed, cwd, context.workspace, context.cancel)

    async def _run(
        self,
        shell: str,
        parsed: ProcessArguments,
        cwd: Path,
        workspace: Path,
        cancel: CancelSignal,
    ) -> ToolOutcome:
        self._enter("starting")
        env = process_environment()
        started = anyio.current_time()
        try:
            async with open_managed_process(
                shell_argv(shell, parsed.command),
                cwd=cwd,
                env=env,
                stdin="devnull",
                stdout="pipe",
                stderr="pipe",
                eof_grace_seconds=0.0,
                term_grace_seconds=self._term_grace,
                kill_grace_seconds=self._kill_grace,
            ) as proc:
                self._enter("running")
                # Prepared while the command runs, not after it.
                streams = _Streams()
                shown_cwd = "." if cwd == workspace else cwd.relative_to(workspace).as_posix()
                # Cancelled from outside (not by the signal), the managed process still tears
                # the whole tree down on the way out, escapees included.
                reason = await self._supervise(proc, parsed, cancel, streams, started)
                outcome = proc.outcome
        except SpawnError as error:
            return self._fail(f"process_execute could not start the shell ({error.reason})")
        status = _status(reason, outcome)
        if reason != "exit":
            self._enter(status)
        duration_ms = int((anyio.current_time() - started) * 1000)
        out = streams.stdout.render()
        err = streams.stderr.render()
        result = {
            "status": status,
            "exitCode": None if outcome is None else outcome.exit_code,
            "signal": None if outcome is None else outcome.signal,
            "durationMs": duration_ms,
            "stdout": out.text,
            "stderr": err.text,
            "stdoutTotalBytes": out.total_bytes,
            "stderrTotalBytes": err.total_bytes,
            "stdoutOmitted": None if out.omitted is None else list(out.omitted),
            "stderrOmitted": None if err.omitted is None else list(err.omitted),
            "shell": shell,
            "cwd": shown_cwd,
        }
        is_error = status not in ("completed", "completed_nonzero")
        return ToolOutcome(_RESULT_ENCODER.encode(result), is_error=is_error)

    async def _supervise(
        self,
        proc: ManagedProcess,
        parsed: ProcessArguments,
        cancel: CancelSignal,
        streams: _Streams,
        started: float,
    ) -> _Reason:
        """Races exit, timeout, cancel and output failure; then tears down, bounded.

        A command whose tree ends within the quiet window is done after one wait. Past it, two
        pump tasks read the pipes and this task itself waits for the exit: no watcher task,
        and no event unless something has to wait for another. The committed reason is the
        strongest of those that ended the wait.
        """
        deadline = started + parsed.timeout_ms / 1000
        if await _ended_quietly(proc, min(deadline, started + QUIET_SECONDS), cancel, streams):
            self._enter(_status("exit", proc.outcome))
            return "exit"
        reason: _Reason | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pump, proc.stdout, streams, streams.stdout)
            tg.start_soon(_pump, proc.stderr, streams, streams.stderr)
            exited = False
            # One scope for the timeout and an output failure (the pumps cancel it).
            with anyio.CancelScope(deadline=deadline) as race:
                streams.race = race
                if not streams.failed:
                    with cancel.cancel_scope():
                        await proc.wait()
                        exited = True
            streams.race = None
            offered: list[_Reason] = []
            if streams.failed:
                offered.append("output")
            if exited:
                offered.append("exit")
            if not offered:
                offered.append("cancel" if cancel.cancelled else "timeout")
            reason = strongest(offered)
            if reason == "exit":
                # Committed now: the drain and teardown that follow only clean up.
                self._enter(_status(reason, proc.outcome))
            else:
                self._enter("terminating")
            await self._finish(proc, reason, cancel, streams)
            if streams.open:
                tg.cancel_scope.cancel()
        assert reason is not None  # only our own cancel, after the race, ends the group quietly
        return reason

    async def _finish(
        self,
        proc: ManagedProcess,
        reason: _Reason,
        cancel: CancelSignal,
        streams: _Streams,
    ) -> bool:
        """Bounded drain and teardown; True when the call's tree is confirmed gone.

        A tree that cannot be confirmed gone is logged by the managed process; it never
        changes the committed result.
        """
        if reason == "exit" and streams.open:
            # The exit message often arrives together with the pipes' EOF: one pass of the loop
            # lets the pumps take it before a bounded wait is set up.
            await anyio.lowlevel.cancel_shielded_checkpoint()
            if streams.open:
                drain_end = anyio.current_time() + self._drain_grace
                with anyio.CancelScope(deadline=drain_end, shield=True), cancel.cancel_scope():
                    await streams.wait_drained()
        # The whole tree, `setsid` and double-fork escapees included (core containment);
        # shielded by the managed process itself.
        gone = await proc.terminate(0.0, self._term_grace, self._kill_grace)
        if streams.open:
            kill_end = anyio.current_time() + self._kill_grace
            with anyio.CancelScope(deadline=kill_end, shield=True):
                await streams.wait_drained()
        return gone


async def _ended_quietly(
    proc: ManagedProcess, quiet_end: float, cancel: CancelSignal, streams: _Streams
) -> bool:
    """True when the whole tree ended by `quiet_end` and both pipes were read to their end:
    the common short command, finished with one wait and no pump task.

    Until then the output waits in the pipes (1 MiB each). Past the window, on a cancel or a
    timeout, or while anything of the tree lives on, the pumps take over; nothing read here
    is lost, it is already in the buffers.
    """
    exited = False
    with cancel.cancel_scope(deadline=quiet_end):
        await proc.wait()
        exited = True
    if not exited or cancel.cancelled or proc.tree_alive():
        return False
    # Both pipes, even when the first is not at its end yet.
    ended = drain_ended(proc.stdout, streams.stdout.feed)
    if drain_ended(proc.stderr, streams.stderr.feed) and ended:
        streams.open = 0
        return True
    return False


def _status(reason: _Reason, outcome: ProcessOutcome | None) -> ProcessState:
    if reason != "exit":
        return _STATUS[reason]
    if outcome is not None and outcome.exit_code == 0:
        return "completed"
    return "completed_nonzero"


def _gate(context: RequestContext) -> str | None:
    """Re-checks the request's dimensions on every call: hiding a tool is not authorization."""
    if context.runtime != "model":
        return "process_execute refused: only the direct model runtime has this tool"
    if context.space != "local":
        return "process_execute refused: commands run only in the local execution space"
    if context.mode != "execute":
        return "process_execute refused: the request is in ask mode"
    if PROCESS_EXECUTE not in context.tool_names:
        return "process_execute refused: the tool is not enabled for this request"
    if context.state != "active" or context.cancel.cancelled:
        return "process_execute refused: the request is no longer active"
    return None


async def _pump(
    stream: anyio.abc.ByteReceiveStream | None,
    streams: _Streams,
    buffer: HeadTailBuffer,
) -> None:
    try:
        if stream is not None:
            while True:
                buffer.feed(await stream.receive(_READ_BYTES))
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        pass
    except (anyio.BrokenResourceError, OSError):
        streams.fail()
    finally:
        streams.ended()
