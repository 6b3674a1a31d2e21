"""`CodexProvider`: the registry-facing side of the Codex backend."""

from __future__ import annotations

import logging

from subagent_core import Capabilities, SubagentRequest, SubagentRun
from subagent_core.kit import (
    AsyncClosing,
    ChildSession,
    configuration_start_error,
    start_preamble,
)

from ._config import CodexConfig
from ._run import CodexChild

_log = logging.getLogger("subagent_codex")

CAPABILITIES = Capabilities(output_schema=True)
"""Codex enforces an output schema itself (`turn/start.outputSchema`); depth, tool filter and
persona cannot be enforced from outside."""


class CodexProvider(AsyncClosing):
    """Runs each child as a fresh `codex app-server` process speaking its JSON-RPC protocol.

    The child does not inherit the parent's context: it sees the prompt and its workspace.
    """

    def __init__(self, config: CodexConfig) -> None:
        self._config = config

    @property
    def config(self) -> CodexConfig:
        """The configuration this provider was built with."""
        return self._config

    @property
    def name(self) -> str:
        return self._config.provider_name

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    @property
    def inherits_parent_context(self) -> bool:
        return False

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Spawns the child, runs the handshake and an ephemeral `thread/start`, publishes.

        The turn starts as soon as the run is published.

        Raises:
            SubagentStartError: cancelled before the child was ready, no usable workspace, MCP
                servers requested (codex takes its own from its config), the command could not
                be spawned, or the handshake failed; the child's whole tree was torn down first.
        """
        config = self._config
        cwd = start_preamble("Codex", config.provider_name, request, config.cwd)
        if request.mcp_servers:
            raise configuration_start_error("Codex", config.provider_name)
        session = self.new_session(CodexChild(config, cwd))
        turn = session.begin_turn(
            request.prompt, cancel=request.cancel, output_schema=request.output_schema
        )
        await session.open(request.cancel)
        return session.run_of(turn, ends_session=True)

    def new_session(self, child: CodexChild) -> ChildSession:
        """The lifecycle that owns `child`, with this provider's deadlines and graces."""
        config = self._config
        return ChildSession(
            child,
            provider=config.provider_name,
            teardown=config.teardown,
            startup_timeout_seconds=config.startup_timeout_seconds,
            idle_timeout_seconds=config.idle_timeout_seconds,
            permission=config.permission,
            permission_protocol="Codex",
            extra_dispose_seconds=config.write_timeout_seconds + 2.0,
            log=_log,
        )

    async def aclose(self) -> None:
        """Nothing to release: every child belongs to its run."""
