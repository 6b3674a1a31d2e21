"""`ChildWatch`: one waiter for a child's whole life — its leader's exit, and the checks the
session driving it asks for meanwhile (the running turn's silence).

A warm child is watched by its pool while it waits and by its run's session once a request
claims it. One task serves both, run by the block that owns the process (`watching_child`), so
the hand-over neither ends a watcher nor starts one: a task start is the costliest step of a
warm hand-over, and a task group's cancel and exit cost more still. Whoever drives the child
sets `listener`, called once, synchronously, when the exit is seen. A session given no watch (a
cold start) runs the same waiter itself.

The waiter also runs the session's periodic check (`check_every`) while it waits for the exit,
so the idle deadline needs no task of its own: the check returns how long until it wants to
run again, and the wait for the exit is bounded by that.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager

import anyio

from ._process import ManagedProcess


class ChildWatch:
    """The leader's exit (a flag, a wait and a one-shot callback) and a periodic check."""

    __slots__ = ("_check", "_seen", "_waiting", "listener")

    def __init__(self) -> None:
        self._seen = anyio.Event()
        self._check: Callable[[], float] | None = None
        self._waiting: anyio.CancelScope | None = None
        self.listener: Callable[[], None] | None = None
        """Called once when the exit is seen (set by whoever drives the child now)."""

    @property
    def exited(self) -> bool:
        """True once the leader's exit was observed."""
        return self._seen.is_set()

    async def wait(self) -> None:
        """Returns once the leader has exited."""
        await self._seen.wait()

    def check_every(self, check: Callable[[], float]) -> None:
        """Has the waiter call `check` until the exit: first after the seconds `check()`
        returns now, then after the seconds each call returns (`math.inf`: not again)."""
        self._check = check
        waiting = self._waiting
        if waiting is not None:
            waiting.deadline = anyio.current_time() + check()

    async def follow(self, proc: ManagedProcess) -> None:
        """The waiter's body: runs the check when due, until `proc`'s leader exits; then tells
        the listener."""
        while True:
            check = self._check
            with anyio.move_on_after(math.inf if check is None else check()) as waiting:
                self._waiting = waiting
                try:
                    await proc.wait()
                finally:
                    self._waiting = None
            if not waiting.cancelled_caught:
                break
        self._seen.set()
        listener = self.listener
        if listener is not None:
            listener()


@asynccontextmanager
async def watching_child(proc: ManagedProcess) -> AsyncGenerator[ChildWatch]:
    """Runs the one waiter of `proc` while the block lasts."""
    watch = ChildWatch()
    async with anyio.create_task_group() as waiter:
        waiter.start_soon(watch.follow, proc)
        try:
            yield watch
        finally:
            waiter.cancel_scope.cancel()
