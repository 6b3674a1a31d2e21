"""Pre-spawned fresh runtimes: spawned and past `initialize`, each handed out exactly once.

A run on a warm runtime skips the interpreter start and the handshake, and the isolation of "a
fresh process per run" stays: a runtime is never given a second run. Everything fixed at spawn
(argv, env, cwd, and the `initialize` cwd/provider/model/maxTokens) is the same for every
runtime of one provider except the cwd when the config leaves it to the request, so the pool
warms for one cwd at a time: the config's, else the last requested one. A request for another
cwd gets a cold start and moves the pool to that cwd.

One filler task (an `OwnedTask`) starts replacements (concurrently, up to the free places) and
closes retired runtimes before starting new ones, so the pool never holds more than `size`
runtimes (idle, starting or closing) besides the runs it handed out. A runtime that died, or
that fails the liveness probe when taken, is never handed out; a runtime whose start or
`initialize` failed is a host-log fact, and the filler then waits for the next take instead of
retrying in a loop.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

import anyio
from subagent_core.kit import OwnedTask

from ._client import SDKClient
from ._errors import JSONRPCError, SDKError

_log = logging.getLogger("subagent_sdk")

PROBE_METHOD: Final = "ping"
"""Sent to a warm runtime when it is taken; any answer (an unknown-method error included)
proves it is alive and reading."""

PROBE_SECONDS: Final = 1.0
"""A warm runtime that does not answer the probe within this is discarded (a cold start runs)."""

Spawn = Callable[[Path], Awaitable[SDKClient]]
"""Starts a runtime for a cwd and completes `initialize`; raises on failure (nothing left)."""


class WarmPool:
    """Up to `size` idle runtimes for one cwd, refilled in the background."""

    def __init__(self, size: int, spawn: Spawn, *, cwd: Path | None) -> None:
        self._size = size
        self._spawn = spawn
        self._cwd = cwd
        self._fixed_cwd = cwd is not None
        self._idle: list[tuple[Path, SDKClient]] = []
        self._retired: list[SDKClient] = []
        self._starting = 0
        self._wanted = anyio.Event()
        self._changed = anyio.Event()
        self._failed = False
        self._closed = False
        self._filler: OwnedTask | None = None

    @property
    def population(self) -> int:
        """Runtimes the pool holds now: idle, starting, or waiting to be closed."""
        return len(self._idle) + self._starting + len(self._retired)

    def _notify(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def _want(self, cwd: Path) -> None:
        """Points the pool at `cwd` (unless the config fixed it) and wakes the filler."""
        if self._closed:
            return
        if not self._fixed_cwd:
            self._cwd = cwd
        self._failed = False
        if self._filler is None or self._filler.done:
            self._filler = OwnedTask.start(self._fill, name="subagent-sdk warm pool")
        self._wanted.set()

    async def warm_up(self, cwd: Path) -> None:
        """Fills the pool for `cwd`; returns once it is full, a start failed, or it closed."""
        self._want(cwd)
        while not (self._closed or (not self._starting and (self._failed or self._full()))):
            changed = self._changed
            await changed.wait()

    def _full(self) -> bool:
        return len(self._idle) >= self._size and not self._retired

    async def take(self, cwd: Path) -> SDKClient | None:
        """A live warm runtime for `cwd`, or `None` (the caller starts one cold).

        Every call also asks the filler to replace what was taken (and to warm for `cwd`).
        """
        self._want(cwd)
        while self._idle:
            warm_cwd, client = self._idle.pop(0)
            self._wanted.set()
            if warm_cwd == cwd and await self._alive(client):
                return client
            if warm_cwd == cwd:
                _log.debug("a warm SDK runtime was not alive when taken; discarding it")
            self._retired.append(client)
        return None

    async def _alive(self, client: SDKClient) -> bool:
        if client.closed or client.outcome is not None:
            return False
        try:
            await client.request(PROBE_METHOD, timeout_seconds=PROBE_SECONDS)
        except JSONRPCError:
            return True
        except SDKError:
            return False
        except BaseException:
            # Cancelled while probing: the runtime is neither handed out nor kept.
            with anyio.CancelScope(shield=True):
                await client.close()
            raise
        return True

    async def _fill(self) -> None:
        async with anyio.create_task_group() as task_group:
            while not self._closed:
                self._retire_stale()
                if self._retired:
                    await self._retired[0].close()
                    self._retired.pop(0)
                    self._notify()
                    continue
                cwd = self._cwd
                while (
                    cwd is not None
                    and not self._failed
                    and len(self._idle) + self._starting < self._size
                ):
                    self._starting += 1
                    task_group.start_soon(self._start_one, cwd)
                self._wanted = anyio.Event()
                self._notify()
                await self._wanted.wait()

    async def _start_one(self, cwd: Path) -> None:
        try:
            client = await self._spawn(cwd)
        except Exception as error:
            # A host-log fact; the next take() starts cold and asks again.
            _log.warning("a warm SDK runtime failed to start: %r", error)
            self._failed = True
        else:
            self._idle.append((cwd, client))
        finally:
            self._starting -= 1
            self._wanted.set()

    def _retire_stale(self) -> None:
        """Moves idle runtimes for another cwd, or already dead, to the closing list."""
        keep: list[tuple[Path, SDKClient]] = []
        for warm_cwd, client in self._idle:
            if warm_cwd != self._cwd or client.closed:
                self._retired.append(client)
            else:
                keep.append((warm_cwd, client))
        self._idle = keep

    async def aclose(self) -> None:
        """Stops refilling and closes every runtime the pool holds (shielded, bounded)."""
        with anyio.CancelScope(shield=True):
            self._closed = True
            if self._filler is not None:
                self._filler.cancel()
                await self._filler.wait()
            clients = [client for _, client in self._idle] + self._retired
            self._idle, self._retired = [], []
            async with anyio.create_task_group() as task_group:
                for client in clients:
                    task_group.start_soon(client.close)
            self._notify()
