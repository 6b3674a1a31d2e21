"""Pre-spawned fresh runtimes: spawned and past `initialize`, each handed to exactly one run.

A run on a warm runtime skips the interpreter start and the handshake, and the isolation of "a
fresh process per run" stays: a runtime is never given a second run. Everything fixed at spawn
(argv, env, cwd, and the `initialize` cwd/provider/model/maxTokens) is the same for every
runtime of one provider except the cwd when the config leaves it to the request, so the pool
warms for one cwd at a time: the config's, else the last requested one. A request for another
cwd gets a cold start and moves the pool to that cwd.

Each warm runtime is its own `OwnedTask`, which owns the managed process from spawn to the end
of its ladder: idle, it waits to be claimed or retired; claimed, it drives the run's
`ChildSession` (`open(owner=task)` → `drive(proc)`, the kit's adopt path), so the run's
deadlines and teardown are the kit's as for a cold start. The pool never holds more than
`size` runtimes (starting, idle or retiring) besides the ones its runs own. A runtime that
died, or that fails the liveness probe when taken, is never handed out; a runtime whose start
or `initialize` failed is a host-log fact, and the pool then waits for the next take instead of
retrying in a loop.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Final

import anyio
from subagent_core import CancelSignal
from subagent_core.kit import (
    ChildSession,
    ManagedProcess,
    OwnedTask,
    SpawnError,
    open_managed_process,
)

from ._config import SDKConfig
from ._connection import SDKConnection
from ._errors import JSONRPCError, SDKError
from ._run import connect, initialize, runtime_command

_log = logging.getLogger("subagent_sdk")

PROBE_METHOD: Final = "ping"
"""Sent to a warm runtime when it is taken; any answer (an unknown-method error included)
proves it is alive and reading."""

PROBE_SECONDS: Final = 1.0
"""A warm runtime that does not answer the probe within this is discarded (a cold start runs)."""


class WarmRuntime:
    """One pre-spawned runtime; `hand_over()` gives it, past `initialize`, to one run."""

    def __init__(self, pool: WarmPool, cwd: Path) -> None:
        self.cwd = cwd
        self._pool = pool
        self.connection: SDKConnection | None = None
        """Set once the runtime is past `initialize`."""
        self._taken = False
        self._retired = False
        self._session: ChildSession | None = None
        self._wake = anyio.Event()
        self._initializing: anyio.CancelScope | None = None
        self.task = OwnedTask.start(self._own, name="subagent-sdk warm runtime")

    @property
    def idle(self) -> bool:
        """Past `initialize`, not taken or retired, its connection not known to be closed."""
        conn = self.connection
        return (
            conn is not None
            and not conn.closed
            and not self._taken
            and not self._retired
            and not self.task.done
        )

    @property
    def taken(self) -> bool:
        """A request holds it (probing it, or its run drives it)."""
        return self._taken

    async def probe(self) -> bool:
        """Takes the runtime for a request and asks it to prove it is alive (within 1 s).

        A runtime that is not alive is retired. A cancelled probe retires it too, and waits
        for its ladder before letting the cancel through.
        """
        conn = self.connection
        assert conn is not None
        self._taken = True
        try:
            await conn.request(PROBE_METHOD, timeout_seconds=PROBE_SECONDS)
        except JSONRPCError:
            return True
        except SDKError:
            _log.debug("a warm SDK runtime was not alive when taken; discarding it")
            self.retire()
            return False
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.discard()
            raise
        return True

    async def hand_over(self, session: ChildSession, cancel: CancelSignal) -> None:
        """Gives the runtime to `session` and waits until its run is ready.

        Raises:
            SubagentStartError: as `ChildSession.open` (the runtime was lost in between).
        """
        self._session = session
        self._wake.set()
        if self.task.done:
            session.abandon()
        self._pool.refill()
        await session.open(cancel, owner=self.task)

    def retire(self) -> None:
        """Ends a runtime no run has (its goodbye and ladder run in its task)."""
        self._taken = False
        self._retired = True
        self._wake.set()
        if self._initializing is not None:
            self._initializing.cancel()

    async def discard(self) -> None:
        """Retires the runtime and waits until its tree is gone (shielded)."""
        with anyio.CancelScope(shield=True):
            self.retire()
            await self.task.wait()

    async def _own(self) -> None:
        pool = self._pool
        config = pool.config
        teardown = config.teardown
        driven = False
        try:
            async with open_managed_process(
                runtime_command(config, self.cwd),
                stdin="pipe",
                stdout="pipe",
                stderr="pipe",
                eof_grace_seconds=teardown.eof_grace_seconds,
                term_grace_seconds=teardown.term_grace_seconds,
                kill_grace_seconds=teardown.kill_grace_seconds,
            ) as proc:
                conn = connect(config, proc)
                async with anyio.create_task_group() as services:
                    services.start_soon(conn.serve)
                    services.start_soon(self._wake_on_close, conn)
                    if await self._initialize(conn):
                        self.connection = conn
                        pool.changed()
                        await self._wake.wait()
                    session = self._session
                    if session is not None:
                        driven = True
                        await session.drive(proc)
                    else:
                        await self._goodbye(conn, proc)
                    services.cancel_scope.cancel()
        except SpawnError as error:
            _log.warning("a warm SDK runtime failed to start: could not spawn (%s)", error.reason)
            pool.failed = True
        except anyio.get_cancelled_exc_class():
            # Only the task's owner going away (the event loop ending) cancels it: no refill.
            pool.halt()
            raise
        finally:
            if self._session is not None and not driven:
                self._session.abandon()  # claimed, then lost before driving: the start fails
            pool.ended(self)

    async def _initialize(self, conn: SDKConnection) -> bool:
        """True once past `initialize`; False when it failed, or the runtime was retired."""
        config = self._pool.config
        with anyio.CancelScope() as scope:
            self._initializing = scope
            if self._retired:
                scope.cancel()
            try:
                # A warm runtime slower than the startup deadline would fail a cold start too.
                await initialize(conn, config, self.cwd, config.startup_timeout_seconds)
            except Exception as error:
                _log.warning("a warm SDK runtime failed to start: %s", type(error).__name__)
                _log.debug("the warm SDK runtime's failure: %r", error)
                self._pool.failed = True
                return False
            finally:
                self._initializing = None
            return True
        return False

    async def _wake_on_close(self, conn: SDKConnection) -> None:
        """An idle runtime that died (or broke its wire) is replaced, never handed out."""
        await conn.wait_closed()
        if self._session is None and not self._retired:
            _log.info("a warm SDK runtime ended while idle; replacing it")
        self._wake.set()

    async def _goodbye(self, conn: SDKConnection, proc: ManagedProcess) -> None:
        """`shutdown` with EOF behind it, then the ladder (the EOF grace counted from EOF)."""
        config = self._pool.config
        teardown = config.teardown
        with anyio.CancelScope(shield=True):
            sent = anyio.current_time()
            error = await conn.goodbye(config.shutdown_timeout_seconds, proc.close_stdin)
            eof = max(0.0, teardown.eof_grace_seconds - (anyio.current_time() - sent))
            gone = await proc.terminate(
                eof, teardown.term_grace_seconds, teardown.kill_grace_seconds
            )
            if error is not None:
                _log.debug("SDK shutdown request failed (runtime gone: %s): %r", gone, error)


class WarmPool:
    """Up to `size` warm runtimes for one cwd, refilled as they are taken or end."""

    def __init__(self, config: SDKConfig, size: int) -> None:
        self.config = config
        self._size = size
        self._fixed_cwd = None if config.cwd is None else Path(config.cwd)
        self._cwd = self._fixed_cwd
        self._runtimes: list[WarmRuntime] = []
        self.failed = False
        """Set when a warm runtime failed to start; cleared by the next request."""
        self._closed = False
        self._changed = anyio.Event()

    @property
    def population(self) -> int:
        """Runtimes the pool holds now: starting, idle or retiring (not the taken ones)."""
        return sum(not runtime.taken for runtime in self._runtimes)

    async def take(self, cwd: Path) -> WarmRuntime | None:
        """A live warm runtime for `cwd`, or `None` (the caller starts one cold).

        Every call also points the pool at `cwd` and refills it.

        Raises:
            anyio.get_cancelled_exc_class(): cancelled while probing (that runtime is gone).
        """
        if self._closed:
            return None
        self._point_at(cwd)
        try:
            while True:
                found = next((r for r in self._runtimes if r.idle and r.cwd == cwd), None)
                if found is None:
                    return None
                if await found.probe():
                    return found
        finally:
            self.refill()

    def _point_at(self, cwd: Path) -> None:
        """Moves an unfixed pool to `cwd` (retiring runtimes for another) and re-arms it."""
        if self._fixed_cwd is None and cwd != self._cwd:
            self._cwd = cwd
            for runtime in self._runtimes:
                if not runtime.taken:
                    runtime.retire()
        self.failed = False

    async def warm_up(self, cwd: Path) -> None:
        """Fills the pool for `cwd`; returns once it is full, a start failed, or it closed."""
        if self._closed:
            return
        self._point_at(cwd)
        self.refill()
        while not (self._closed or (not self._settling() and (self.failed or self._full()))):
            await self._changed.wait()

    def _settling(self) -> bool:
        """True while a runtime no request holds is still starting or retiring."""
        return any(not r.taken and not r.idle for r in self._runtimes)

    def _full(self) -> bool:
        return sum(r.idle for r in self._runtimes) >= self._size

    def changed(self) -> None:
        """Wakes `warm_up` waiters (a runtime became ready or ended)."""
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def ended(self, runtime: WarmRuntime) -> None:
        """A runtime's task is ending: forget it and refill its place."""
        if runtime in self._runtimes:
            self._runtimes.remove(runtime)
        self.refill()
        self.changed()

    def halt(self) -> None:
        """Stops refilling for good (the loop the pool lives on is ending)."""
        self._closed = True

    def refill(self) -> None:
        """Starts runtimes until the pool holds `size` (not while closed or after a failure)."""
        cwd = self._cwd
        if self._closed or self.failed or cwd is None:
            return
        while self.population < self._size:
            self._runtimes.append(WarmRuntime(self, cwd))

    async def aclose(self) -> None:
        """Stops refilling and ends every runtime no run holds (shielded; waits for their
        ladders)."""
        with anyio.CancelScope(shield=True):
            self._closed = True
            pending = [runtime for runtime in self._runtimes if not runtime.taken]
            for runtime in pending:
                runtime.retire()
            for runtime in pending:
                await runtime.task.wait()
            self.changed()
