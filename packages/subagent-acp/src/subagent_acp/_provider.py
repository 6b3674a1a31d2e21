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
from collections.abc import Callable
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
    ChildTurns,
    SessionSlot,
    WarmPool,
    WarmProvider,
    aborted_before_start_text,
)

from ._config import ACPConfig

if TYPE_CHECKING:
    from ._pool import WarmChild

_log = logging.getLogger("subagent_acp")

_RUN_MODULE = "subagent_acp._run"


async def _load_run_module() -> None:
    """Imports the run (and with it the `acp` SDK, ~1 s of schema building) off the loop."""
    if _RUN_MODULE not in sys.modules:
        await anyio.to_thread.run_sync(importlib.import_module, _RUN_MODULE)


class ACPProvider(WarmProvider[ACPConfig, "WarmChild"]):
    """Runs each child as a fresh ACP agent process and drives it as an ACP client.

    The gated capabilities are false (a remote child's depth, tool filter, persona or output
    schema cannot be enforced from here); sessions are kept, and resumed by handle unless a
    placement runs the agent elsewhere. The child does not inherit the parent's context.
    """

    kind = "ACP"
    offered = Capabilities(sessions=True, resume=True)
    """Sessions, resumable where the agent advertises `session/resume` or `session/load` (in
    the agent's own store: where a placement ran it, which a later process's placement need
    not reach again); depth, tool filter, persona and output schema cannot be enforced on a
    remote agent."""

    def __init__(self, config: ACPConfig) -> None:
        super().__init__(config, WarmPool(config.prewarm, config.cwd, _warm_child(config)))

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Takes a warm child or spawns one, runs the handshake, and publishes the run.

        The prompt is sent as soon as the run is published.

        Raises:
            SubagentStartError: cancelled before the child was ready, no usable workspace, the
                command could not be spawned, or the handshake failed; the child's whole tree
                was torn down first.
        """
        cwd = self.workspace_for(request)
        await _load_run_module()
        if request.cancel.cancelled:
            raise SubagentStartError(aborted_before_start_text("ACP"))
        warm = self._pool.take(cwd)
        if warm is not None:
            claim = warm.claim(request)  # its replacement starts once the run is under way
            try:
                return await claim.session.one_shot(request, owner=claim.owner)
            except SubagentStartError:
                if request.cancel.cancelled or not claim.died():
                    raise
                _log.info("a warm ACP child died before its run started; starting cold")
        from ._run import ACPChild, new_session  # loaded above; only a cold start needs it

        child = ACPChild(self._config, cwd)
        child.serve(request)
        return await new_session(self._config, child).one_shot(request)

    async def open_turns(
        self, request: SessionRequest, slot: SessionSlot, *, resume: bool
    ) -> ChildTurns:
        """A cold child whose ACP session takes one `session/prompt` per turn; or a fresh child
        that continues the recorded ACP session (`session/resume`, else `session/load`, as the
        agent advertises) in the recorded workspace.

        Raises:
            SubagentStartError: `resume-miss` when the agent no longer knows the session,
                `configuration` for another workspace or an agent that cannot resume, else as
                `start`.
        """
        cwd = self.session_workspace_for(request, slot, resume=resume)
        await _load_run_module()
        if request.cancel.cancelled:
            raise SubagentStartError(aborted_before_start_text("ACP"))
        from ._run import ACPChild, new_session

        child = ACPChild(
            self._config,
            cwd,
            resume=slot.record.child_session if resume else None,
            on_session=lambda session_id: slot.update(child_session=session_id),
        )
        child.serve(request.turn_request(""))
        session = new_session(self._config, child)
        await session.open(request.cancel)
        return ChildTurns(session, slot, request)

    async def warm_up(self, cwd: Path | None = None) -> None:
        """Fills the warm pool now and waits until it is full (or a start failed).

        `cwd` is needed only when the config has none (the pool then warms for it). Without
        `prewarm` it does nothing. Start failures are host-log facts, never raised.
        """
        if self._pool.size > 0:
            await _load_run_module()
        await super().warm_up(cwd)


def _warm_child(config: ACPConfig) -> Callable[[WarmPool[WarmChild], Path], WarmChild]:
    """Starts one warm child for the pool (the module, and the `acp` SDK with it, is loaded
    by the time the pool refills: `start` and `warm_up` load it first)."""

    def start(pool: WarmPool[WarmChild], cwd: Path) -> WarmChild:
        from ._pool import WarmChild

        return WarmChild(pool, config, cwd)

    return start
