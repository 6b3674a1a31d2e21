"""Warm SDK runtimes: spawned and past `initialize`, each handed to exactly one run.

The pool itself is the kit's `WarmPool` (one cwd at a time, refilled as runtimes are taken or
end, a failed start waits for the next request); this module is one warm runtime. Everything
fixed at spawn (argv, env, cwd, and the `initialize` cwd/provider/model/maxTokens) is the same
for every runtime of a provider except the cwd the pool warms for.

Each warm runtime is its own `OwnedTask`, which owns the managed process from spawn to the end
of its ladder: idle, it waits to be claimed or retired; claimed, it drives the run's
`ChildSession` (`open(owner=task)` → `drive(proc)`, the kit's adopt path), so the run's
deadlines and teardown are the kit's as for a cold start. A runtime that died, or that fails
the liveness probe when taken, is never handed out.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Final

import anyio
from subagent_core.kit import (
    ChildSession,
    ManagedProcess,
    OwnedTask,
    SpawnError,
    WarmPool,
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

    def __init__(self, pool: WarmPool[WarmRuntime], config: SDKConfig, cwd: Path) -> None:
        self.cwd = cwd
        self._pool = pool
        self._config = config
        self.connection: SDKConnection | None = None
        """Set once the runtime is past `initialize`."""
        self._claimed = False
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
            and not self._claimed
            and not self._retired
            and not self.task.done
        )

    @property
    def claimed(self) -> bool:
        """A request holds it (probing it, or its run drives it)."""
        return self._claimed

    async def probe(self) -> bool:
        """Takes the runtime for a request and asks it to prove it is alive (within 1 s).

        A runtime that is not alive is retired. A cancelled probe retires it too, and waits
        for its ladder before letting the cancel through.
        """
        conn = self.connection
        assert conn is not None
        self._claimed = True
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

    def hand_over(self, session: ChildSession) -> OwnedTask:
        """Gives the runtime to `session`: returns the task that drives it from now on (open
        the session with it as `owner`; a runtime lost in between fails that start)."""
        self._session = session
        self._wake.set()
        self._pool.refill()
        return self.task

    def retire(self) -> None:
        """Ends a runtime no run has (its goodbye and ladder run in its task)."""
        self._claimed = False
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
        pool, config = self._pool, self._config
        driven = False
        try:
            async with open_managed_process(
                runtime_command(config, self.cwd), stderr="pipe", teardown=config.teardown
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
        config = self._config
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
        config = self._config
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
