"""`ACPProvider`: the registry-facing side of the ACP backend.

With `prewarm > 0` a run's child usually comes from the provider's warm pool (spawned and past
`initialize` in the background, used for exactly one run); otherwise, or when none is ready for
the run's cwd, it is spawned cold. A warm child found dead before its session starts is
replaced by a cold start, so the caller never sees it.

A session (`open_session`) is a cold child whose ACP session takes one `session/prompt` per
turn; `resume_session` continues a recorded one in a fresh child (`_resume`). The agent keeps
the conversation in its own store, so nothing per handle is kept here beyond the record.
"""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
from subagent_core import (
    Capabilities,
    SessionRequest,
    SubagentRequest,
    SubagentRun,
    SubagentStartError,
)
from subagent_core.kit import (
    AsyncClosing,
    ChildTurns,
    SessionSlot,
    aborted_before_start_text,
    session_workspace,
    start_preamble,
)

from ._config import ACPConfig

if TYPE_CHECKING:
    from ._pool import WarmPool

_log = logging.getLogger("subagent_acp")

_RUN_MODULE = "subagent_acp._run"

CAPABILITIES = Capabilities(sessions=True, resume=True)
"""Sessions, resumable where the agent advertises `session/resume` or `session/load`; depth,
tool filter, persona and output schema cannot be enforced on a remote agent."""


async def _load_run_module() -> None:
    """Imports the run (and with it the `acp` SDK, ~1 s of schema building) off the loop."""
    if _RUN_MODULE not in sys.modules:
        await anyio.to_thread.run_sync(importlib.import_module, _RUN_MODULE)


class ACPProvider(AsyncClosing):
    """Runs each child as a fresh ACP agent process and drives it as an ACP client.

    The gated capabilities are false (a remote child's depth, tool filter, persona or output
    schema cannot be enforced from here); sessions are kept, and resumed by handle unless a
    placement runs the agent elsewhere. The child does not inherit the parent's context.
    """

    def __init__(self, config: ACPConfig) -> None:
        self._config = config
        self._pool: WarmPool | None = None
        self._closed = False

    @property
    def config(self) -> ACPConfig:
        """The configuration this provider was built with."""
        return self._config

    @property
    def name(self) -> str:
        return self._config.provider_name

    @property
    def capabilities(self) -> Capabilities:
        if self._config.remote is not None:
            # The agent's session store lives where the placement ran it, which a later
            # process's placement need not reach again.
            return Capabilities(sessions=True)
        return CAPABILITIES

    @property
    def inherits_parent_context(self) -> bool:
        return False

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Takes a warm child or spawns one, runs the handshake, and publishes the run.

        The prompt is sent as soon as the run is published.

        Raises:
            SubagentStartError: cancelled before the child was ready, no usable workspace, the
                command could not be spawned, or the handshake failed; the child's whole tree
                was torn down first.
        """
        config = self._config
        cwd = start_preamble("ACP", config.provider_name, request, config.cwd)
        await _load_run_module()
        if request.cancel.cancelled:
            raise SubagentStartError(aborted_before_start_text("ACP"))
        from ._run import ACPChild, new_session

        pool = self._warm_pool()
        warm = None if pool is None else pool.take(cwd, request)
        if warm is not None:
            turn = warm.session.begin_turn(request.prompt, cancel=request.cancel)
            try:
                await warm.session.open(request.cancel, owner=warm.owner)
            except SubagentStartError:
                if request.cancel.cancelled or not warm.died():
                    raise
                _log.info("a warm ACP child died before its run started; starting cold")
            else:
                return warm.session.run_of(turn, ends_session=True)
        child = ACPChild(config, cwd)
        child.serve(request)
        session = new_session(config, child)
        turn = session.begin_turn(request.prompt, cancel=request.cancel)
        await session.open(request.cancel)
        return session.run_of(turn, ends_session=True)

    async def open_session(self, request: SessionRequest, slot: SessionSlot) -> ChildTurns:
        """A cold child whose ACP session takes one `session/prompt` per turn.

        Raises:
            SubagentStartError: as `start`.
        """
        return await self._open(request, slot, resume=False)

    async def resume_session(self, request: SessionRequest, slot: SessionSlot) -> ChildTurns:
        """A fresh child that continues the recorded ACP session (`session/resume`, else
        `session/load`, as the agent advertises) in the recorded workspace.

        Raises:
            SubagentStartError: `resume-miss` when the agent no longer knows the session,
                `configuration` for another workspace or an agent that cannot resume, else as
                `start`.
        """
        return await self._open(request, slot, resume=True)

    async def _open(
        self, request: SessionRequest, slot: SessionSlot, *, resume: bool
    ) -> ChildTurns:
        config = self._config
        cwd = session_workspace(
            "ACP", config.provider_name, request, config.cwd, slot, resume=resume
        )
        await _load_run_module()
        if request.cancel.cancelled:
            raise SubagentStartError(aborted_before_start_text("ACP"))
        from ._run import ACPChild, new_session

        child = ACPChild(
            config,
            cwd,
            resume=slot.record.child_session if resume else None,
            on_session=lambda session_id: slot.update(child_session=session_id),
        )
        child.serve(request.turn_request(""))
        session = new_session(config, child)
        await session.open(request.cancel)
        return ChildTurns(session, slot, request)

    @property
    def warm_count(self) -> int:
        """Children the warm pool holds now (idle, starting or retiring); 0 without `prewarm`."""
        return 0 if self._pool is None else self._pool.population

    async def warm_up(self, cwd: Path | None = None) -> None:
        """Fills the warm pool now and waits until it is full (or a start failed).

        `cwd` is needed only when the config has none (the pool then warms for it). Without
        `prewarm` it does nothing. Start failures are host-log facts, never raised.
        """
        target = self._config.cwd or cwd
        if self._config.prewarm == 0 or self._closed or target is None:
            return
        await _load_run_module()
        pool = self._warm_pool()
        if pool is not None:
            await pool.warm_up(Path(target))

    async def aclose(self) -> None:
        """Ends every warm child and stops refilling (shielded; idempotent).

        Runs already started are not affected; later `start()` calls start cold. The registry
        calls it when the provider is unregistered (`unregister()` starts it without waiting,
        `unregister_and_close` waits), or call it yourself.
        """
        self._closed = True
        if self._pool is not None:
            await self._pool.aclose()

    def _warm_pool(self) -> WarmPool | None:
        """The pool, created on first use (it imports the `acp` SDK)."""
        if self._config.prewarm == 0 or self._closed:
            return None
        if self._pool is None:
            from ._pool import WarmPool

            self._pool = WarmPool(self._config, self._config.prewarm)
        return self._pool
