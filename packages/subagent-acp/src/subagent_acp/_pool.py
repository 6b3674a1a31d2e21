"""Warm ACP children: spawned and past `initialize`, each handed to exactly one run.

The pool itself is the kit's `WarmPool` (one cwd at a time, at most `size` children besides
the ones its runs own, a failed start waits for the next request); this module is one warm
child. Each is its own `OwnedTask` that owns the managed process from spawn to the end of its
ladder. Past `initialize` it builds the run's `ChildSession` and drives it at once (the kit's
adopt path): the session sets up everything but the handshake and parks until a request opens
it (`ChildSession.open(owner=...)` with the claim) or the child is retired or exits (`release`).
So the hand-over starts and ends no task and builds nothing but the request's turn: one waiter
(`watching_child`) serves the child for its whole life (the pool hears its exit while the child
waits, the run's session its exit and idle deadline once it is claimed), and the child's
prompter (`_prompter`) runs in the pool's block, which also closes the connection.

A claimed child's replacement starts once its run is under way (its first update, or its
settlement), and whenever a child ends: a replacement spawned at the claim would compete with
the hand-over itself (`session/new` and the prompt) for the parent's loop and the machine's
cores, and that hand-over latency is what the pool exists to remove.

What binds at spawn: argv, env, the process cwd, and the client capabilities `initialize`
advertised. A warm child that died, or whose spawn or `initialize` failed, is never handed out.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

import anyio
from acp.schema import InitializeResponse
from subagent_core import SubagentRequest
from subagent_core.kit import (
    CLOSE_SECONDS,
    ChildSession,
    OwnedTask,
    SpawnError,
    WarmPool,
    watching_child,
)

from ._bridge import Session
from ._config import ACPConfig
from ._prompter import Prompter
from ._run import ACPChild, new_session
from ._spawn import capabilities_for, open_child, open_session

_log = logging.getLogger("subagent_acp")


@dataclass(frozen=True, slots=True)
class WarmStart:
    """A claimed warm child: its session (open it with `owner`) and its protocol."""

    session: ChildSession
    child: ACPChild
    owner: OwnedTask

    def died(self) -> bool:
        """True when the start failed because the child was lost, exited or its wire broke
        before its session started: the provider then starts the run cold."""
        failure = self.session.start_failure
        return self.child.lost or (
            failure is not None and failure.category in ("process-exit", "transport")
        )


class WarmChild:
    """One pre-spawned child and the session built for it while it waits; `claim()` hands
    both to a request."""

    def __init__(self, pool: WarmPool[WarmChild], config: ACPConfig, cwd: Path) -> None:
        self.cwd = cwd
        self._pool = pool
        self._config = config
        self._exited = False
        self._retired = False
        self._claim: WarmStart | None = None
        self._prepared: tuple[ACPChild, ChildSession] | None = None
        self._initializing: anyio.CancelScope | None = None
        self.task = OwnedTask.start(self._own, name="subagent_acp.warm_child")

    @property
    def idle(self) -> bool:
        """Past `initialize`, not claimed, not retired, and its process not known to be dead.

        (A death not noticed yet is caught by the run, which then starts cold.)"""
        return (
            self._prepared is not None
            and self._claim is None
            and not self._retired
            and not self._exited
            and not self.task.done
        )

    @property
    def claimed(self) -> bool:
        return self._claim is not None

    def claim(self, request: SubagentRequest) -> WarmStart:
        """Hands the child, with the session its task drives already (parked before the
        handshake), to `request`: opening the session with the claim's owner lets the
        handshake begin."""
        prepared = self._prepared
        assert prepared is not None
        child, session = prepared
        child.serve(request)
        child.on_under_way = self._pool.refill
        self._claim = WarmStart(session, child, self.task)
        return self._claim

    def retire(self) -> None:
        """Ends an unclaimed child (its ladder runs in its task)."""
        self._retired = True
        self._stop_waiting()

    def _on_exit(self) -> None:
        """The exit, seen before a run took the child (its session then listens)."""
        self._exited = True
        if self._claim is None and self._prepared is not None:
            _log.info("a warm ACP child exited while idle; replacing it")
        self._stop_waiting()

    def _stop_waiting(self) -> None:
        if self._claim is None and self._prepared is not None:
            self._prepared[1].release()
        if self._initializing is not None:
            self._initializing.cancel()

    async def _own(self) -> None:
        config = self._config
        driven = False
        try:
            async with (
                open_child(config, self.cwd) as proc,
                watching_child(proc) as watch,
                anyio.create_task_group() as prompts,
            ):
                watch.listener = self._on_exit
                session = open_session(proc, config)
                prompter = Prompter()
                prompts.start_soon(prompter.serve)
                try:
                    prepared = await self._prepare(session, prompter)
                    if prepared is not None:
                        # Parked before the handshake until a request opens the session, or
                        # the child is retired or exits (released). A claim wins over a death
                        # noticed at the same moment: the session classifies it.
                        driven = True
                        await prepared.drive(proc, watch)
                finally:
                    prompts.cancel_scope.cancel()
                    with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_SECONDS):
                        await session.close()
        except SpawnError as error:
            _log.warning("a warm ACP child could not be spawned (%s)", error.reason)
            self._pool.failed = True
        except anyio.get_cancelled_exc_class():
            # Only the task's owner going away (the event loop ending) cancels it: no refill.
            self._pool.halt()
            raise
        finally:
            claim = self._claim
            if claim is not None and not driven:
                claim.child.lost = True  # claimed, then lost before driving: the start fails
                claim.session.abandon()
            self._pool.ended(self)

    async def _prepare(self, session: Session, prompter: Prompter) -> ChildSession | None:
        """`initialize`, then the run's child and session, built while the child waits;
        `None` when `initialize` failed or the child was retired or exited first."""
        config = self._config
        initialized = await self._initialize(session)
        if initialized is None:
            return None
        child = ACPChild(config, self.cwd, warm=(session, initialized, prompter))
        prepared = new_session(config, child)
        self._prepared = (child, prepared)
        self._pool.changed()
        return prepared

    async def _initialize(self, session: Session) -> InitializeResponse | None:
        """The answer to `initialize`; `None` when it failed, timed out, or the child exited
        or was retired first."""
        result: InitializeResponse | None = None
        failed = False
        # A warm child slower than the startup deadline would fail a cold start too: not used.
        bound = self._config.startup_timeout_seconds
        with (
            anyio.move_on_after(math.inf if bound is None else bound),
            anyio.CancelScope() as scope,
        ):
            self._initializing = scope
            if self._retired or self._exited:
                scope.cancel()
            try:
                result = await session.initialize(capabilities_for(self._config))
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
