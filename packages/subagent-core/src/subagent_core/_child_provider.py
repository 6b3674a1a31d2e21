"""`ChildProvider`: the registry face every provider over `ChildSession` shares, written once.

A provider over the kit is a config and its protocol. What the registry sees of it (its name,
its config, no parent context, the two session entry points, closing) is the same for each, so
it is written here; a provider gives `capabilities`, `start` (most end in
`ChildSession.one_shot`) and, for sessions, the one hook `open_turns`. `WarmProvider` adds a
`WarmPool` (`prewarm`): its children are started ahead of need and ended by `aclose`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from ._child_config import ChildConfigFields
from ._closing import AsyncClosing
from ._errors import ChildKind, SubagentError
from ._session import ChildTurns, session_workspace
from ._session_store import SessionSlot
from ._types import Capabilities, SessionRequest, SubagentRequest
from ._warm_pool import ChildT, WarmPool
from ._workspace import configuration_start_error, start_preamble

ConfigT = TypeVar("ConfigT", bound=ChildConfigFields)


class ChildProvider(AsyncClosing, Generic[ConfigT]):
    """The registry face of a provider over `ChildSession`: a config and its name.

    Its children never see the parent's conversation (only the prompt and their workspace),
    and it holds nothing beyond its runs (`WarmProvider` holds a warm pool). Subclasses give
    `capabilities` and `start`, and `open_turns` for sessions.
    """

    kind: ClassVar[ChildKind]
    """Names the provider's children in the fixed start-error text (`"ACP"`, `"Claude"`, …)."""

    offered: ClassVar[Capabilities] = Capabilities()
    """What the provider's children enforce (`capabilities`, but for a placement)."""

    takes_mcp_servers: ClassVar[bool] = True
    """False for a child that takes its MCP servers from its own configuration: a request
    that asks for some then fails its start as `configuration`, before anything runs."""

    def __init__(self, config: ConfigT) -> None:
        self._config = config
        # Built once: a start's checks are on the path of every run (a warm one's included).
        self._configured_cwd = None if config.cwd is None else Path(config.cwd)

    @property
    def config(self) -> ConfigT:
        """The configuration this provider was built with."""
        return self._config

    @property
    def name(self) -> str:
        """The registry name (the config's `provider_name`)."""
        return self._config.provider_name

    @property
    def capabilities(self) -> Capabilities:
        """`offered`, without `resume` when a placement runs the children elsewhere: a
        session's state lives on this host or where the placement ran its child, which a later
        process's placement need not reach again."""
        if self._config.remote is not None:
            return dataclasses.replace(self.offered, resume=False)
        return self.offered

    @property
    def inherits_parent_context(self) -> bool:
        """Always False: the child sees the prompt and its workspace only."""
        return False

    def workspace_for(self, request: SubagentRequest) -> Path:
        """The checks before a one-shot run's spawn (`start_preamble` with the configured
        cwd); returns the child's workspace.

        Raises:
            SubagentStartError: as `start_preamble`, or MCP servers asked of a child that takes
                none (`configuration`).
        """
        cwd = start_preamble(self.kind, self.name, request, self._configured_cwd)
        self._refuse_mcp_servers(bool(request.mcp_servers))
        return cwd

    def session_workspace_for(
        self, request: SessionRequest, slot: SessionSlot, *, resume: bool
    ) -> Path:
        """The checks before a session's spawn (`session_workspace` with the configured cwd);
        returns the child's workspace.

        Raises:
            SubagentStartError: as `session_workspace`, or MCP servers asked of a child that
                takes none (`configuration`).
        """
        cwd = session_workspace(
            self.kind, self.name, request, self._configured_cwd, slot, resume=resume
        )
        self._refuse_mcp_servers(bool(request.mcp_servers))
        return cwd

    def _refuse_mcp_servers(self, asked: bool) -> None:
        if asked and not self.takes_mcp_servers:
            raise configuration_start_error(self.kind, self.name)

    async def open_session(self, request: SessionRequest, slot: SessionSlot) -> ChildTurns:
        """A child kept for several turns, held in `slot` (`open_turns`).

        Raises:
            SubagentError: `UNSUPPORTED_CAPABILITY` without `Capabilities.sessions`.
            SubagentStartError: as `open_turns`.
        """
        self._check("sessions")
        return await self.open_turns(request, slot, resume=False)

    async def resume_session(self, request: SessionRequest, slot: SessionSlot) -> ChildTurns:
        """A fresh child that continues the session recorded in `slot` (`open_turns`).

        Raises:
            SubagentError: `UNSUPPORTED_CAPABILITY` without `Capabilities.resume`.
            SubagentStartError: as `open_turns`.
        """
        self._check("resume")
        return await self.open_turns(request, slot, resume=True)

    async def open_turns(
        self, request: SessionRequest, slot: SessionSlot, *, resume: bool
    ) -> ChildTurns:
        """Starts the child of a new session (`resume=False`) or of a recorded one.

        Raises:
            SubagentStartError: the child could not start; everything was rolled back first.
        """
        raise NotImplementedError

    def _check(self, capability: str) -> None:
        """Refuses a session the capabilities do not offer (the registry refuses it first;
        this keeps a direct caller from a silent fresh start)."""
        if not getattr(self.capabilities, capability):
            raise SubagentError(
                "UNSUPPORTED_CAPABILITY",
                f'subagent provider "{self.name}" does not support the "{capability}" capability',
            )

    async def aclose(self) -> None:
        """Nothing to release: every child belongs to its run or session."""


class WarmProvider(ChildProvider[ConfigT], Generic[ConfigT, ChildT]):
    """A `ChildProvider` whose runs may take a child from its `WarmPool` (`_pool`)."""

    def __init__(self, config: ConfigT, pool: WarmPool[ChildT]) -> None:
        super().__init__(config)
        self._pool = pool

    @property
    def warm_count(self) -> int:
        """Children the warm pool holds now (idle, starting or retiring); 0 without `prewarm`."""
        return self._pool.population

    async def warm_up(self, cwd: Path | None = None) -> None:
        """Fills the warm pool now and waits until it is full (or a start failed).

        `cwd` is needed only when the config has none (the pool then warms for it). Without
        `prewarm` it does nothing. Start failures are host-log facts, never raised.
        """
        await self._pool.warm_up(cwd)

    async def aclose(self) -> None:
        """Ends every warm child and stops refilling (shielded, bounded; idempotent).

        Runs already started are not affected; later `start()` calls start cold. The registry
        calls it when the provider is unregistered (`unregister()` starts it without waiting,
        `unregister_and_close` waits), or call it yourself.
        """
        await self._pool.aclose()
