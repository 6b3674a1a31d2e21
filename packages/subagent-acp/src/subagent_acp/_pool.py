"""Pre-spawned fresh children: spawned and past `initialize`, each handed to exactly one run.

A run on a warm child skips the interpreter start and `initialize`; the isolation of "a fresh
process per run" stays, because a child never gets a second run. Each warm child is its own
`OwnedTask` that owns the managed process from spawn to the end of its ladder: idle, it waits
for a run to claim it (then drives that run to its end) or to be retired. The pool starts a
replacement whenever one is claimed or ends, so it never holds more than `size` children
(idle, starting or retiring) besides the ones its runs own.

What binds at spawn: argv, env, the process cwd, and the client capabilities `initialize`
advertised. The process cwd is the config's, else the request's, so without a configured cwd
the pool warms for one cwd at a time (the last requested); a request for another cwd starts
cold and moves the pool. A warm child that died, or whose spawn or `initialize` failed, is never
handed out; a failure is a host-log fact, and the pool then waits for the next request instead
of retrying in a loop.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Final

import anyio
from acp.schema import InitializeResponse
from subagent_core import ManagedProcess, OwnedTask, SpawnError

from ._bridge import Session
from ._config import ACPConfig
from ._run import capabilities_for, open_child, open_session

if TYPE_CHECKING:
    from ._run import ACPRun

_log = logging.getLogger("subagent_acp")

WARM_INITIALIZE_SECONDS: Final = 60.0
"""A warm child that has not answered `initialize` by then is retired (its slot is refilled)."""

_CLOSE_SECONDS: Final = 1.0


class WarmChild:
    """One pre-spawned child; `claim()` hands it to a run."""

    def __init__(self, pool: WarmPool, cwd: Path) -> None:
        self.cwd = cwd
        self._pool = pool
        self._ready = False
        self._exited = False
        self._run: ACPRun | None = None
        self._claimed = anyio.Event()
        self._retired = anyio.Event()
        self.task = OwnedTask.start(self._own, name="subagent_acp.warm_child")

    @property
    def idle(self) -> bool:
        """Past `initialize`, not claimed, not retired, and its process not known to be dead.

        (The process's own waiter notices an exit; this never polls the process, so it cannot
        take that waiter's wake-up. A death not noticed yet is caught by the run, which then
        starts cold.)"""
        return (
            self._ready
            and self._run is None
            and not self._retired.is_set()
            and not self._exited
            and not self.task.done
        )

    @property
    def claimed(self) -> bool:
        return self._run is not None

    def claim(self, run: ACPRun) -> OwnedTask:
        """Hands the child to `run`; returns the task that now drives it."""
        self._run = run
        self._claimed.set()
        return self.task

    def retire(self) -> None:
        """Ends an unclaimed child (its ladder runs in its task)."""
        self._retired.set()

    async def _own(self) -> None:
        config = self._pool.config
        driven = False
        try:
            async with open_child(config, self.cwd) as proc:
                session = open_session(proc, config)
                try:
                    initialized = await self._initialize(proc, session)
                    if initialized is None:
                        return
                    self._ready = True
                    self._pool.changed()
                    if await self._wait_for_claim(proc) and self._run is not None:
                        driven = True
                        await self._run.drive_owned(proc, session, initialized)
                finally:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_SECONDS):
                        await session.close()
        except SpawnError as error:
            _log.warning("a warm ACP child could not be spawned (%s)", error.reason)
            self._pool.failed = True
        finally:
            if self._run is not None and not driven:
                self._run.abandon()  # claimed, then lost before driving: the start fails
            self._pool.ended(self)

    async def _initialize(
        self, proc: ManagedProcess, session: Session
    ) -> InitializeResponse | None:
        result: list[InitializeResponse] = []
        capabilities = capabilities_for(self._pool.config)
        with anyio.move_on_after(WARM_INITIALIZE_SECONDS):
            async with anyio.create_task_group() as tg:

                async def initialize() -> None:
                    try:
                        result.append(await session.initialize(capabilities))
                    except Exception as error:
                        _log.warning("a warm ACP child failed initialize", exc_info=error)
                    tg.cancel_scope.cancel()

                async def watch(event: anyio.Event) -> None:
                    await event.wait()
                    tg.cancel_scope.cancel()

                async def watch_exit() -> None:
                    await proc.wait()
                    self._exited = True
                    tg.cancel_scope.cancel()

                tg.start_soon(initialize)
                tg.start_soon(watch, self._retired)
                tg.start_soon(watch_exit)
        if not result:
            if not self._retired.is_set():
                _log.warning("a warm ACP child did not complete initialize; not used")
                self._pool.failed = True
            return None
        return result[0]

    async def _wait_for_claim(self, proc: ManagedProcess) -> bool:
        """True once a run claimed the child; False when retired or the child died idle."""
        async with anyio.create_task_group() as tg:

            async def watch(event: anyio.Event) -> None:
                await event.wait()
                tg.cancel_scope.cancel()

            async def watch_exit() -> None:
                await proc.wait()
                self._exited = True
                if not self._claimed.is_set():
                    _log.info("a warm ACP child exited while idle; replacing it")
                tg.cancel_scope.cancel()

            tg.start_soon(watch, self._claimed)
            tg.start_soon(watch, self._retired)
            tg.start_soon(watch_exit)
        # A claim wins over a death noticed at the same moment: the run classifies the exit.
        return self._claimed.is_set()


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

    def take(self, cwd: Path, run: ACPRun) -> OwnedTask | None:
        """Hands an idle child for `cwd` to `run` and returns the task that drives it, or
        `None` (the caller starts cold); refills the pool either way."""
        if self._closed:
            return None
        self._point_at(cwd)
        found = next((child for child in self._children if child.idle and child.cwd == cwd), None)
        owner = None if found is None else found.claim(run)
        self._fill()
        return owner

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
        self._fill()
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
        self._fill()
        self.changed()

    def _fill(self) -> None:
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
