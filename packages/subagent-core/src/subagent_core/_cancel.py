"""The single cancellation channel a parent hands to a child run, and its bridges to anyio."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Generator
from contextlib import contextmanager

import anyio


class CancelSignal:
    """A one-way latch: once cancelled it stays cancelled.

    It can be created outside a running event loop (the waiters' events are made lazily), so a
    `SubagentRequest` can be built anywhere. `cancel()` is synchronous and idempotent, so any
    code path in the event loop's thread, a signal handler included, can call it.

    Two bridges replace relay tasks that await the signal and cancel something else:
    `cancel_scope()` gives an anyio scope that `cancel()` cancels on the spot, and `child()`
    gives a signal that the parent's `cancel()` cancels too. Neither starts a task; every
    registration they make is dropped when the scope exits or the child is gone.
    """

    __slots__ = ("__weakref__", "_callbacks", "_cancelled", "_children")

    def __init__(self) -> None:
        self._cancelled = False
        self._callbacks: dict[object, Callable[[], None]] = {}
        self._children: weakref.WeakSet[CancelSignal] = weakref.WeakSet()

    @property
    def cancelled(self) -> bool:
        """True once `cancel()` has been called (on this signal or an ancestor)."""
        return self._cancelled

    def cancel(self) -> None:
        """Requests cancellation: wakes every waiter, cancels every registered scope and child.

        Calling it again does nothing.
        """
        if self._cancelled:
            return
        self._cancelled = True
        callbacks, self._callbacks = self._callbacks, {}
        children = list(self._children)
        self._children.clear()
        for callback in callbacks.values():
            callback()
        for child in children:
            child.cancel()

    def child(self) -> CancelSignal:
        """A new signal that is cancelled when this one is, and can also be cancelled alone.

        The link is weak: a child nobody holds any more is dropped from this signal, so a
        long-lived parent does not accumulate the children of finished calls.
        """
        linked = CancelSignal()
        if self._cancelled:
            linked._cancelled = True
        else:
            self._children.add(linked)
        return linked

    @contextmanager
    def cancel_scope(self, *, deadline: float = math.inf) -> Generator[anyio.CancelScope]:
        """An anyio cancel scope that `cancel()` cancels synchronously, with no watcher task.

        Entered already cancelled when the signal is. On exit the scope is unregistered; a
        cancellation it caught is swallowed as any anyio scope does (check
        `scope.cancelled_caught` or `signal.cancelled` to tell what happened). Use it from the
        task that runs the guarded code. `deadline` (on anyio's clock) bounds it too: one scope
        where a bounded wait would otherwise nest a second.
        """
        scope = anyio.CancelScope(deadline=deadline)
        key = object()
        if self._cancelled:
            scope.cancel()
        else:
            self._callbacks[key] = scope.cancel
        try:
            with scope:
                yield scope
        finally:
            self._callbacks.pop(key, None)

    async def wait(self) -> None:
        """Returns once the signal is cancelled (at once if it already is)."""
        if self._cancelled:
            return
        event = anyio.Event()
        key = object()
        self._callbacks[key] = event.set
        try:
            await event.wait()
        finally:
            self._callbacks.pop(key, None)

    @property
    def registrations(self) -> int:
        """How many scopes, waiters and live children this signal currently holds."""
        return len(self._callbacks) + len(self._children)

    def __repr__(self) -> str:
        return f"CancelSignal(cancelled={self._cancelled})"
