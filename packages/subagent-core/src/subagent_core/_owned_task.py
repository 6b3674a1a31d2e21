"""A task owned by an object instead of a block: the one asyncio adapter for it.

anyio has no task that outlives the call that started it, but a provider publishes a run from
`start()` and its holder settles and disposes it later, possibly from other tasks, so the
run's driver cannot live in a task group of any caller. Each such driver is one `OwnedTask`:
its body is structured anyio code, its owner stops it with `cancel()` and always awaits
`wait()`, and nothing the body raises escapes unobserved.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import anyio

_log = logging.getLogger("subagent_core")

# asyncio keeps only weak references to tasks; a dropped owner must not lose a running body.
_running: set[asyncio.Task[None]] = set()


class OwnedTask:
    """Runs `body` in a task of its own until it returns or `cancel()` is called.

    Start one with `OwnedTask.start(body, name=...)` inside a running asyncio event loop. An
    exception from the body is logged on the `subagent_core` logger (it never reaches `wait()`),
    so the body should turn expected failures into its owner's state itself.
    """

    __slots__ = ("_done", "_scope", "_task")

    def __init__(self) -> None:
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def start(cls, body: Callable[[], Awaitable[None]], *, name: str) -> OwnedTask:
        """Starts `body()` as its own task on the running asyncio loop.

        Raises:
            RuntimeError: no asyncio event loop is running in this thread.
        """
        loop = asyncio.get_running_loop()
        owned = cls()
        task = loop.create_task(owned._main(body, name), name=name)
        _running.add(task)
        task.add_done_callback(_running.discard)
        # A task cancelled before its first step never enters `_main`; `wait()` must still end.
        task.add_done_callback(lambda _: owned._done.set())
        owned._task = task
        return owned

    async def _main(self, body: Callable[[], Awaitable[None]], name: str) -> None:
        try:
            with self._scope:
                await body()
        except Exception:
            _log.exception("owned task %s failed", name)
        finally:
            self._done.set()

    @property
    def done(self) -> bool:
        """True once the body has returned, failed or been cancelled."""
        return self._done.is_set()

    def cancel(self) -> None:
        """Cancels the body (the cleanup it shields still runs); idempotent, also before it ran."""
        self._scope.cancel()

    async def wait(self) -> None:
        """Waits until the body has finished; cancelling this wait leaves the body running."""
        await self._done.wait()


class LoopHome:
    """The event loop an object's owned tasks run on, noted where it is known.

    Sync code (an `unregister()` function, a callback) may need to start async cleanup for an
    object whose tasks live on a loop: on that loop's own thread the cleanup starts at once,
    from another thread it is handed to the loop, and once the loop has ended there is nothing
    that could run it.
    """

    __slots__ = ("_loop",)

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def note(self) -> None:
        """Records this thread's running loop (does nothing outside one)."""
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            pass

    def start_soon(self, body: Callable[[], Awaitable[None]], *, name: str) -> bool:
        """Starts `body` as an `OwnedTask` on the home loop (else this thread's running loop).

        Returns True when it was started (or handed to the home loop from another thread),
        False when no loop can run it: none was ever noted and none runs here, or the home loop
        has stopped.
        """
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        loop = self._loop or running
        if loop is None:
            return False
        if loop is running:
            OwnedTask.start(body, name=name)
            return True
        if loop.is_closed() or not loop.is_running():
            return False
        # The task is started from a task on that loop (anyio needs one to build its scope).
        starter = _start_owned(body, name)
        try:
            asyncio.run_coroutine_threadsafe(starter, loop)
        except RuntimeError:  # closed in the meantime
            starter.close()
            return False
        return True


async def _start_owned(body: Callable[[], Awaitable[None]], name: str) -> None:
    OwnedTask.start(body, name=name)
