"""Pre-spawned fresh children: spawned and past `initialize`, each handed to exactly one run.

A run on a warm child skips the interpreter start and `initialize`; the isolation of "a fresh
process per run" stays, because a child never gets a second run. Each warm child is its own
`OwnedTask` that owns the managed process (and its one exit watcher) from spawn to the end of
its ladder: idle, it waits for a run to claim it (then drives that run to its end) or to be
retired. The pool never holds more than `size` children (idle, starting or retiring) besides
the ones its runs own.

A claimed child's replacement starts once its run is under way (its first update, or its
settlement), and whenever a child ends: a replacement spawned at the claim would compete with
the hand-over itself (`session/new` and the prompt) for the parent's loop and the machine's
cores, and that hand-over latency is what the pool exists to remove.

What binds at spawn: argv, env, the process cwd, and the client capabilities `initialize`
advertised. The process cwd is the config's, else the request's, so without a configured cwd
the pool warms for one cwd at a time (the last requested); a request for another cwd starts
cold and moves the pool. A warm child that died, or whose spawn or `initialize` failed, is never
handed out; a failure is a host-log fact, and the pool then waits for the next request instead
of retrying in a loop.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Final

import anyio
from acp.schema import InitializeResponse
from subagent_core import SubagentRequest
from subagent_core.kit import OwnedTask, SpawnError

from ._bridge import Session
from ._config import ACPConfig
from ._exit_watch import watching_exit
from ._run import ACPRun
from ._spawn import capabilities_for, open_child, open_session

_log = logging.getLogger("subagent_acp")

_CLOSE_SECONDS: Final = 1.0


class WarmChild:
    """One pre-spawned child and the run built for it while it waits; `claim()` hands both to a
    request."""

    def __init__(self, pool: WarmPool, cwd: Path) -> None:
        self.cwd = cwd
        self._pool = pool
        self._exited = False
        self._retired = False
        self._run: ACPRun | None = None
        self._prepared: ACPRun | None = None
        self._wake = anyio.Event()
        self._initializing: anyio.CancelScope | None = None
        self.task = OwnedTask.start(self._own, name="subagent_acp.warm_child")

    @property
    def idle(self) -> bool:
        """Past `initialize`, not claimed, not retired, and its process not known to be dead.

        (A death not noticed yet is caught by the run, which then starts cold.)"""
        return (
            self._prepared is not None
            and self._run is None
            and not self._retired
            and not self._exited
            and not self.task.done
        )

    @property
    def claimed(self) -> bool:
        return self._run is not None

    def claim(self, request: SubagentRequest) -> tuple[ACPRun, OwnedTask]:
        """Hands the child, with the run built while it waited, to `request`; returns the run
        and the task that now drives it."""
        run = self._prepared
        assert run is not None
        run.serve(request)
        self._run = run
        run.on_under_way = self._pool.refill
        self._wake.set()
        return run, self.task

    def retire(self) -> None:
        """Ends an unclaimed child (its ladder runs in its task)."""
        self._retired = True
        self._stop_waiting()

    def _on_exit(self) -> None:
        """The exit, seen before a run took over the watcher."""
        self._exited = True
        if self._run is None and self._prepared is not None:
            _log.info("a warm ACP child exited while idle; replacing it")
        self._stop_waiting()

    def _stop_waiting(self) -> None:
        self._wake.set()
        if self._initializing is not None:
            self._initializing.cancel()

    async def _own(self) -> None:
        config = self._pool.config
        driven = False
        try:
            async with open_child(config, self.cwd) as proc, watching_exit(proc) as watch:
                watch.listener = self._on_exit
                session = open_session(proc, config)
                try:
                    initialized = await self._initialize(session)
                    if initialized is None:
                        return
                    self._prepared = ACPRun(config, self.cwd)
                    self._pool.changed()
                    await self._wake.wait()
                    # A claim wins over a death noticed at the same moment: the run classifies it.
                    run = self._run
                    if run is not None:
                        driven = True
                        await run.drive_owned(proc, session, initialized, watch)
                finally:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_SECONDS):
                        await session.close()
        except SpawnError as error:
            _log.warning("a warm ACP child could not be spawned (%s)", error.reason)
            self._pool.failed = True
        except anyio.get_cancelled_exc_class():
            # Only the task's owner going away (the event loop ending) cancels it: no refill.
            self._pool.halt()
            raise
        finally:
            if self._run is not None and not driven:
                self._run.abandon()  # claimed, then lost before driving: the start fails
            self._pool.ended(self)

    async def _initialize(self, session: Session) -> InitializeResponse | None:
        """The answer to `initialize`; `None` when it failed, timed out, or the child exited
        or was retired first."""
        result: InitializeResponse | None = None
        failed = False
        # A warm child slower than the startup deadline would fail a cold start too: not used.
        bound = self._pool.config.startup_timeout_seconds
        with (
            anyio.move_on_after(math.inf if bound is None else bound),
            anyio.CancelScope() as scope,
        ):
            self._initializing = scope
            if self._retired or self._exited:
                scope.cancel()
            try:
                result = await session.initialize(capabilities_for(self._pool.config))
            except Exception as error:
                _log.warning("a warm ACP child failed initialize", exc_info=error)
                failed = True
            finally:
                self._initializing = None
        if result is None and not self._retired:
            if not failed:
                _log.warning("a warm ACP child did not complete initialize; not used")
            self._pool.failed = True
        return result


class WarmPool:
    """Up to `size` idle warm children for one cwd, refilled as they are used."""

    def __init__(self, config: ACPConfig, size: int) -> None:
        self.config = config
        self._size = size
        self._fixed_cwd = config.cwd
        self._cwd: Path | None = config.cwd
        self._children: list[WarmChild] = []
        self.failed = False
        """Set when a warm child failed to start; cleared by the next request."""
        self._closed = False
        self._changed = anyio.Event()

    @property
    def population(self) -> int:
        """Children the pool holds: idle, starting or retiring (not the ones runs own)."""
        return sum(not child.claimed for child in self._children)

    def take(self, cwd: Path, request: SubagentRequest) -> tuple[ACPRun, OwnedTask] | None:
        """Hands an idle child for `cwd` to `request`: its run and the task that drives it, or
        `None` (the caller starts cold, and the pool refills now)."""
        if self._closed:
            return None
        self._point_at(cwd)
        found = next((child for child in self._children if child.idle and child.cwd == cwd), None)
        if found is None:
            self.refill()
            return None
        return found.claim(request)  # its replacement starts once the run is under way

    def _point_at(self, cwd: Path) -> None:
        """Moves an unfixed pool to `cwd` (retiring children for another) and re-arms it."""
        if self._fixed_cwd is None and cwd != self._cwd:
            self._cwd = cwd
            for child in self._children:
                if not child.claimed:
                    child.retire()
        self.failed = False

    async def warm_up(self, cwd: Path) -> None:
        """Fills the pool for `cwd`; returns when it is full, a start failed, or it closed."""
        if self._closed:
            return
        self._point_at(cwd)
        self.refill()
        while not (self._closed or (not self._settling() and (self.failed or self._full()))):
            await self._changed.wait()

    def _settling(self) -> bool:
        """True while an unclaimed child is still starting or retiring."""
        return any(not child.claimed and not child.idle for child in self._children)

    def _full(self) -> bool:
        return sum(child.idle for child in self._children) >= self._size

    def changed(self) -> None:
        """Wakes `warm_up` waiters (a child became ready or ended)."""
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def ended(self, child: WarmChild) -> None:
        """A child's task is ending: forget it and refill its place."""
        if child in self._children:
            self._children.remove(child)
        self.refill()
        self.changed()

    def halt(self) -> None:
        """Stops refilling for good (the loop the pool lives on is ending)."""
        self._closed = True

    def refill(self) -> None:
        """Starts children until the pool holds `size` (not while closed or after a failure)."""
        cwd = self._cwd
        if self._closed or self.failed or cwd is None:
            return
        while self.population < self._size:
            self._children.append(WarmChild(self, cwd))

    async def aclose(self) -> None:
        """Stops refilling and ends every unclaimed child (shielded; waits for their ladders)."""
        with anyio.CancelScope(shield=True):
            self._closed = True
            pending = [child for child in self._children if not child.claimed]
            for child in pending:
                child.retire()
            for child in pending:
                await child.task.wait()
            self.changed()
