"""`WarmPool`: children started ahead of need, each handed to exactly one run.

A run on a warm child skips the spawn and the handshake's first step, and the isolation of "a
fresh process per run" stays, because a warm child never gets a second run. What a provider
fixes at spawn (argv, env, the process cwd) is the same for all its children except the cwd
when the config leaves it to the request, so a pool warms for one cwd at a time: the config's,
else the last one asked for. A request for another cwd starts cold and moves the pool.

The pool keeps the population; each child is the provider's (`WarmChild`): an `OwnedTask` that
owns its process from spawn to the end of its ladder, prepares it (its handshake's first step),
waits to be claimed or retired, and once claimed drives the run's `ChildSession` (the kit's
adopt path: `open(owner=child.task)`, `drive(proc)`, `abandon()` for a child lost in between),
so a warm run's deadlines and teardown are the kit's as for a cold start. The pool never holds
more than `size` children (starting, idle or retiring) besides the ones its runs own. A child
whose start failed is a host-log fact (`failed`), and the pool then waits for the next request
instead of retrying in a loop.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Generic, Protocol, TypeVar

import anyio

from ._owned_task import OwnedTask

MAX_PREWARM = 64
"""Most warm children one provider keeps (a config's `prewarm`)."""


class WarmChild(Protocol):
    """One pre-started child of a `WarmPool`, as the pool sees it."""

    @property
    def cwd(self) -> Path:
        """The workspace it was started for."""
        raise NotImplementedError

    @property
    def task(self) -> OwnedTask:
        """The task that owns its process until its tree is gone."""
        raise NotImplementedError

    @property
    def idle(self) -> bool:
        """Prepared, not claimed or retired, and not known to be dead: it may be handed out."""
        raise NotImplementedError

    @property
    def claimed(self) -> bool:
        """A request holds it (its run owns it from now on; the pool no longer counts it)."""
        raise NotImplementedError

    def retire(self) -> None:
        """Ends it while no request holds it (its goodbye and ladder run in its task)."""
        raise NotImplementedError


ChildT = TypeVar("ChildT", bound=WarmChild)


class WarmPool(Generic[ChildT]):
    """Up to `size` warm children for one cwd, refilled as they are claimed or end.

    `start(pool, cwd)` starts one child (its task included) for `cwd`; the child reports back
    through `changed()`, `ended()`, `halt()` and `failed`.
    """

    def __init__(
        self, size: int, cwd: Path | None, start: Callable[[WarmPool[ChildT], Path], ChildT]
    ) -> None:
        self.size = size
        """How many unclaimed children the pool keeps (0: none, every start is cold)."""
        self._fixed_cwd = cwd
        self._cwd = cwd
        self._start = start
        self._children: list[ChildT] = []
        self.failed = False
        """Set when a child failed to start; cleared by the next request."""
        self._closed = False
        self._changed = anyio.Event()

    @property
    def population(self) -> int:
        """Children the pool holds now: starting, idle or retiring (not the claimed ones)."""
        return sum(not child.claimed for child in self._children)

    def take(self, cwd: Path) -> ChildT | None:
        """Points the pool at `cwd` and returns an idle child for it, or `None` (the caller
        starts cold): when closed, or when none is idle (the pool then refills).

        The caller claims the child it got, or looks again with `idle_for` (a child that
        failed its liveness check is retired, never handed out).
        """
        if self._closed:
            return None
        self._point_at(cwd)
        found = self.idle_for(cwd)
        if found is None:
            self.refill()
        return found

    def idle_for(self, cwd: Path) -> ChildT | None:
        """An idle child started for `cwd`, if any."""
        return next((child for child in self._children if child.idle and child.cwd == cwd), None)

    async def warm_up(self, cwd: Path | None) -> None:
        """Fills the pool for its fixed cwd, else `cwd`; returns once it is full, a start
        failed, or it closed (at once without a cwd or a size)."""
        target = self._fixed_cwd or cwd
        if self._closed or self.size == 0 or target is None:
            return
        self._point_at(target)
        self.refill()
        while not (self._closed or (not self._settling() and (self.failed or self._full()))):
            await self._changed.wait()

    def _point_at(self, cwd: Path) -> None:
        """Moves an unfixed pool to `cwd` (retiring children for another) and re-arms it."""
        if self._fixed_cwd is None and cwd != self._cwd:
            self._cwd = cwd
            for child in self._children:
                if not child.claimed:
                    child.retire()
        self.failed = False

    def _settling(self) -> bool:
        """True while an unclaimed child is still starting or retiring."""
        return any(not child.claimed and not child.idle for child in self._children)

    def _full(self) -> bool:
        return sum(child.idle for child in self._children) >= self.size

    def changed(self) -> None:
        """Wakes `warm_up` waiters (a child became ready or ended)."""
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def ended(self, child: ChildT) -> None:
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
        while self.population < self.size:
            self._children.append(self._start(self, cwd))

    async def aclose(self) -> None:
        """Stops refilling and ends every unclaimed child (shielded; waits for their ladders;
        idempotent). Runs already started are not affected."""
        with anyio.CancelScope(shield=True):
            self._closed = True
            pending = [child for child in self._children if not child.claimed]
            for child in pending:
                child.retire()
            for child in pending:
                await child.task.wait()
            self.changed()
