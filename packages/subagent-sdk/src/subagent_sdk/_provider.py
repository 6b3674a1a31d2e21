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
    SubagentRequest,
    SubagentRun,
)
from subagent_core.kit import (
    ChildSession,
    ChildTurns,
    OwnedTask,
    SessionSlot,
    WarmPool,
    WarmProvider,
    compose_start_error,
)

from ._config import SDKConfig
from ._pool import WarmRuntime
from ._run import SDKChild

_log = logging.getLogger("subagent_sdk")


class SDKProvider(WarmProvider[SDKConfig, WarmRuntime]):
    """Runs children as SDK runtime processes; registered under `config.provider_name`."""

    kind = "SDK"
    offered = Capabilities(sessions=True)
    """Several turns on one runtime; no resume (see the module doc). A runtime's depth, tools,
    persona or output schema cannot be enforced from here."""

    def __init__(self, config: SDKConfig) -> None:
        cwd = None if config.cwd is None else Path(config.cwd)
        pool = WarmPool[WarmRuntime](
            config.prewarm, cwd, lambda pool, cwd: WarmRuntime(pool, config, cwd)
        )
        super().__init__(config, pool)

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Takes a warm runtime or spawns one and completes `initialize`; publishes the run.

        The prompt goes out as soon as the run is published.

        Raises:
            SubagentStartError: cancelled, no usable workspace, or the runtime failed to start
                or answer `initialize`; the runtime's tree is gone first.
        """
        session, owner = await self._session_for(self.workspace_for(request), request.cancel)
        return await session.one_shot(request, owner=owner)

    async def open_turns(
        self, request: SessionRequest, slot: SessionSlot, *, resume: bool
    ) -> ChildTurns:
        """A runtime kept for several turns, each a `session/prompt` on its one session.

        A turn given up early (cancel, dispose, idle deadline) runs out in the runtime, as the
        wire has no cancel: the next turn's prompt waits behind it and collects only from its
        own receipt. Never a resume: `Capabilities.resume` is false, so `resume_session` is
        refused before it gets here (the wire cannot load a session by id, and a runtime that
        lost one would start afresh).

        Raises:
            SubagentStartError: as `start`.
        """
        cwd = self.session_workspace_for(request, slot, resume=resume)
        session, owner = await self._session_for(cwd, request.cancel)
        await session.open(request.cancel, owner=owner)
        return ChildTurns(session, slot, request)

    async def _session_for(
        self, cwd: Path, cancel: CancelSignal
    ) -> tuple[ChildSession, OwnedTask | None]:
        """The lifecycle of a runtime for `cwd`, and the warm runtime's task that drives it
        (`None`: the session spawns it cold).

        Raises:
            SubagentStartError: cancelled while taking a warm runtime (its tree is gone first).
        """
        warm = await self._take_warm(cwd, cancel)
        if warm is None:
            return self.new_session(SDKChild(self._config, cwd)), None
        _log.debug("an SDK run starts on a warm runtime")
        session = self.new_session(SDKChild(self._config, cwd, warm=warm.connection))
        return session, warm.hand_over(session)

    async def _take_warm(self, cwd: Path, cancel: CancelSignal) -> WarmRuntime | None:
        """A live warm runtime for `cwd`, if one is ready (each is probed when taken).

        Raises:
            SubagentStartError: cancelled while taking it (its tree is gone first).
        """
        pool = self._pool
        warm: WarmRuntime | None = None
        with cancel.cancel_scope():
            try:
                warm = pool.take(cwd)
                while warm is not None and not await warm.probe():
                    warm = pool.idle_for(cwd)
            finally:
                pool.refill()
        if cancel.cancelled:
            if warm is not None:
                await warm.discard()
            raise compose_start_error("SDK", cancelled=True, startup_line=None, cleanup_line=None)
        return warm

    def new_session(self, child: SDKChild) -> ChildSession:
        """The lifecycle that owns `child`, with this provider's deadlines and graces (the SDK
        wire carries no permission requests: the client refuses every request from the
        runtime, so the turn's gate is never asked)."""
        return ChildSession.configured(child, self._config, permission_protocol="ACP", log=_log)
