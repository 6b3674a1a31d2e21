"""`SDKClient`: one runtime process it spawns and owns, one connection, many subscriptions.

The connection — reading and writing frames, pending requests, subscriptions, refusals, the
write bound, the leader-exit watch — is `_connection.SDKConnection`, which the provider's
protocol also speaks over on the processes the lifecycle kit spawns. The client adds what a
direct user needs around it: it spawns the runtime (stderr piped and drained continuously) in
a task it owns, and `close()` ends it with the bounded `shutdown` goodbye and the managed
ladder.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Self

import anyio
from subagent_core.kit import (
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_WRITE_TIMEOUT_SECONDS,
    ChildCommand,
    IdleDeadline,
    OwnedTask,
    ProcessOutcome,
    SpawnError,
    open_managed_process,
)

from ._connection import SDKConnection
from ._errors import TransportClosedError

_log = logging.getLogger("subagent_sdk")


class SDKClient(SDKConnection):
    """Drives one SDK runtime process over newline-delimited JSON-RPC on its stdio.

    Use as `async with SDKClient(...) as client:` or call `start()` and, on every path,
    `close()` (memoized; safe from any task). All errors raised are `SDKError` subclasses.

    `env` is the runtime's whole environment (`None` inherits this process's unchanged; the
    provider passes `subagent_core.child_env(...)`, which drops credential-shaped names).
    The reader and stderr drain run in one task the client owns (asyncio backend), so a client
    started in one task may be closed from another.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        write_timeout_seconds: float = DEFAULT_WRITE_TIMEOUT_SECONDS,
        shutdown_timeout_seconds: float = 0.5,
        eof_grace_seconds: float = 0.5,
        term_grace_seconds: float = 0.5,
        kill_grace_seconds: float = 3.0,
        placed: ChildCommand | None = None,
    ) -> None:
        super().__init__(
            max_frame_bytes=max_frame_bytes,
            write_timeout_seconds=write_timeout_seconds,
            on_line=self._touch_idle,
        )
        self._argv = [command, *args]
        # A command with a placement (`remote`) is opened by it, with its own env and cwd.
        self._placed = placed
        self._cwd = None if cwd is None else os.fspath(cwd)
        self._env = None if env is None else dict(env)
        self._shutdown_timeout_seconds = shutdown_timeout_seconds
        self._graces = (eof_grace_seconds, term_grace_seconds, kill_grace_seconds)
        self._supervisor: OwnedTask | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._spawn_error: Exception | None = None
        self._close_lock = anyio.Lock()
        self._close_result: bool | None = None
        self.idle: IdleDeadline | None = None
        """Touched on every line the runtime writes (one clock reading per line)."""

    def _touch_idle(self) -> None:
        idle = self.idle
        if idle is not None:
            idle.touch()

    # ---- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Spawns the runtime and starts reading its output.

        Raises:
            TransportClosedError: the process could not be spawned (the `SpawnError` reason is
                in the message and the error is the `__cause__`).
        """
        if self._supervisor is not None:
            raise RuntimeError("SDKClient.start() was already called")
        self._supervisor = OwnedTask.start(self._supervise, name="subagent-sdk client")
        try:
            await self._ready.wait()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.close()
            raise
        error = self._spawn_error
        if error is not None:
            reason = error.reason if isinstance(error, SpawnError) else "os-error"
            raise TransportClosedError(f"could not start the SDK runtime ({reason})") from error

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> bool:
        """Stops the runtime; True when its process tree is confirmed gone.

        Memoized, shielded and bounded: a `shutdown` request limited to
        `shutdown_timeout_seconds` with stdin EOF right behind it, then the managed ladder
        (the rest of the EOF grace → SIGTERM → SIGKILL). A failed `shutdown` request is only
        logged. Never raises for a cleanup failure.
        """
        gone = False
        with anyio.CancelScope(shield=True):
            async with self._close_lock:
                if self._close_result is None:
                    self._close_result = await self._close()
                gone = self._close_result
        return gone

    async def _close(self) -> bool:
        if self._supervisor is None:
            self._fail_transport("the SDK client was closed before it started")
            return True
        await self._ready.wait()
        process = self._process
        gone = True
        if process is not None:
            eof_grace, term_grace, kill_grace = self._graces
            eof_sent = anyio.current_time()
            shutdown_error = await self.goodbye(self._shutdown_timeout_seconds, process.close_stdin)
            eof_grace = max(0.0, eof_grace - (anyio.current_time() - eof_sent))
            gone = await process.terminate(eof_grace, term_grace, kill_grace)
            if shutdown_error is not None:
                _log.debug(
                    "SDK shutdown request failed (runtime gone: %s): %r", gone, shutdown_error
                )
            if not gone:
                _log.warning("the SDK runtime's process tree is not confirmed gone")
        self._stop.set()
        await self._supervisor.wait()
        self._fail_transport("the SDK client is closed")
        self._drops.summary()
        return gone

    @property
    def pid(self) -> int | None:
        """The runtime's pid once spawned."""
        return None if self._process is None else self._process.pid

    @property
    def outcome(self) -> ProcessOutcome | None:
        """The runtime's exit facts once it was reaped, else `None`."""
        return None if self._process is None else self._process.outcome

    async def wait_outcome(self, seconds: float) -> ProcessOutcome | None:
        """Waits up to `seconds` for the runtime to exit; its facts, or `None` if not observed."""
        process = self._process
        if process is None:
            return None
        with anyio.move_on_after(seconds):
            await process.wait()
        return process.outcome

    # ---- the owned task -------------------------------------------------------------------

    async def _supervise(self) -> None:
        eof_grace, term_grace, kill_grace = self._graces
        try:
            async with open_managed_process(
                self._argv if self._placed is None else self._placed,
                cwd=self._cwd if self._placed is None else None,
                env=self._env if self._placed is None else None,
                stdin="pipe",
                stdout="pipe",
                stderr="pipe",
                eof_grace_seconds=eof_grace,
                term_grace_seconds=term_grace,
                kill_grace_seconds=kill_grace,
            ) as process:
                self.attach(process)
                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(self.serve)
                    self._ready.set()
                    await self._stop.wait()
                    task_group.cancel_scope.cancel()
        except Exception as error:
            if self._ready.is_set():
                raise
            self._spawn_error = error
        finally:
            self._fail_transport("the SDK runtime connection closed")
            self._ready.set()
