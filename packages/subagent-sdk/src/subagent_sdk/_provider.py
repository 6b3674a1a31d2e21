"""`SDKProvider`: each run is a fresh SDK runtime, one fresh session and one prompt.

The run's lifecycle is the kit's `ChildSession` with one turn over the protocol in `_run`. With
`prewarm > 0` the runtime usually comes from the provider's warm pool (spawned and past
`initialize` in the background, used for exactly one run; the session adopts it); otherwise, or
when none is ready for the run's cwd, the session spawns it cold.

A session (`open_session`) is the same child kept for several turns: each turn prompts the
runtime's one session again. There is no cold resume: the wire cannot load a session by id
(an unknown id is created empty), so a runtime that lost the conversation could not be told
from one that kept it, and a resume would silently start afresh.
"""

from __future__ import annotations

import logging
from pathlib import Path

from subagent_core import (
    CancelSignal,
    Capabilities,
    SessionRequest,
    SubagentError,
    SubagentRequest,
    SubagentRun,
    SubagentStartError,
)
from subagent_core.kit import (
    AsyncClosing,
    ChildSession,
    ChildTurns,
    SessionSlot,
    aborted_before_start_text,
    compose_start_error,
    session_workspace,
    start_preamble,
)

from ._config import SDKConfig
from ._pool import WarmPool, WarmRuntime
from ._run import SDKChild

_log = logging.getLogger("subagent_sdk")

CAPABILITIES = Capabilities(sessions=True)
"""Several turns on one runtime; no resume (see the module doc). A runtime's depth, tools,
persona or output schema cannot be enforced from here."""


class SDKProvider(AsyncClosing):
    """Runs children as SDK runtime processes; registered under `config.provider_name`."""

    def __init__(self, config: SDKConfig) -> None:
        self._config = config
        self._pool = WarmPool(config, config.prewarm) if config.prewarm > 0 else None

    @property
    def name(self) -> str:
        return self._config.provider_name

    @property
    def config(self) -> SDKConfig:
        return self._config

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    @property
    def inherits_parent_context(self) -> bool:
        return False

    @property
    def warm_count(self) -> int:
        """Runtimes the warm pool holds now (idle, starting or closing); 0 without `prewarm`."""
        return 0 if self._pool is None else self._pool.population

    async def warm_up(self, cwd: Path | None = None) -> None:
        """Fills the warm pool now and waits until it is full (or a start failed).

        `cwd` is needed only when the config has none (the pool then warms for it). Without
        `prewarm` it does nothing. Start failures are host-log facts, never raised.
        """
        pool, config_cwd = self._pool, self._config.cwd
        target = Path(config_cwd) if config_cwd is not None else cwd
        if pool is not None and target is not None:
            await pool.warm_up(target)

    async def aclose(self) -> None:
        """Tears down every warm runtime and stops refilling (shielded, bounded; idempotent).

        Runs already started are not affected; later `start()` calls start cold. The registry
        calls it when the provider is unregistered (`unregister()` starts it without waiting,
        `unregister_and_close` waits), or call it yourself.
        """
        if self._pool is not None:
            await self._pool.aclose()

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Takes a warm runtime or spawns one and completes `initialize`; publishes the run.

        The prompt goes out as soon as the run is published.

        Raises:
            SubagentStartError: cancelled, no usable workspace, or the runtime failed to start
                or answer `initialize`; the runtime's tree is gone first.
        """
        config = self._config
        configured = None if config.cwd is None else Path(config.cwd)
        cwd = start_preamble("SDK", config.provider_name, request, configured)
        warm = await self._take_warm(cwd, request.cancel)
        child = SDKChild(config, cwd, warm=None if warm is None else warm.connection)
        session = self.new_session(child)
        turn = session.begin_turn(request.prompt, cancel=request.cancel, budget=request.budget)
        await self._open(session, warm, request.cancel)
        return session.run_of(turn, ends_session=True)

    async def open_session(self, request: SessionRequest, slot: SessionSlot) -> ChildTurns:
        """A runtime kept for several turns, each a `session/prompt` on its one session.

        A turn given up early (cancel, dispose, idle deadline) runs out in the runtime, as the
        wire has no cancel: the next turn's prompt waits behind it and collects only from its
        own receipt.

        Raises:
            SubagentStartError: as `start`.
        """
        config = self._config
        if request.cancel.cancelled:
            raise SubagentStartError(aborted_before_start_text("SDK"))
        configured = None if config.cwd is None else Path(config.cwd)
        cwd = session_workspace(
            "SDK", config.provider_name, request, configured, slot, resume=False
        )
        warm = await self._take_warm(cwd, request.cancel)
        session = self.new_session(
            SDKChild(config, cwd, warm=None if warm is None else warm.connection)
        )
        await self._open(session, warm, request.cancel)
        return ChildTurns(session, slot, request)

    async def resume_session(self, request: SessionRequest, slot: SessionSlot) -> ChildTurns:
        """Not offered (`Capabilities.resume` is false, so the registry refuses it first): the
        wire cannot load a session by id, and a runtime that lost one would start afresh.

        Raises:
            SubagentError: `UNSUPPORTED_CAPABILITY`, always.
        """
        raise SubagentError(
            "UNSUPPORTED_CAPABILITY",
            f'subagent provider "{self.name}" does not support the "resume" capability',
        )

    async def _open(
        self, session: ChildSession, warm: WarmRuntime | None, cancel: CancelSignal
    ) -> None:
        if warm is None:
            await session.open(cancel)
        else:
            _log.debug("an SDK run starts on a warm runtime")
            await warm.hand_over(session, cancel)

    async def _take_warm(self, cwd: Path, cancel: CancelSignal) -> WarmRuntime | None:
        """A warm runtime for `cwd`, if one is ready.

        Raises:
            SubagentStartError: cancelled while taking it (its tree is gone first).
        """
        if self._pool is None:
            return None
        warm: WarmRuntime | None = None
        with cancel.cancel_scope():
            warm = await self._pool.take(cwd)
        if cancel.cancelled:
            if warm is not None:
                await warm.discard()
            raise compose_start_error("SDK", cancelled=True, startup_line=None, cleanup_line=None)
        return warm

    def new_session(self, child: SDKChild) -> ChildSession:
        """The lifecycle that owns `child`, with this provider's deadlines and graces."""
        config = self._config
        return ChildSession(
            child,
            provider=config.provider_name,
            teardown=config.teardown,
            startup_timeout_seconds=config.startup_timeout_seconds,
            idle_timeout_seconds=config.idle_timeout_seconds,
            # The SDK wire carries no permission requests (the client refuses every request
            # from the runtime), so the turn's gate is never asked.
            permission="reject",
            permission_protocol="ACP",
            log=_log,
        )
