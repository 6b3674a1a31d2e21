"""`ClaudeProvider`: the registry-facing side of the Claude Code backend.

Each run is a fresh CLI process (no pool: the CLI's start is a fraction of a second, and a
child reused across runs would carry one run's session into the next).
"""

from __future__ import annotations

import logging

from subagent_core import Capabilities, SubagentRequest, SubagentRun
from subagent_core.kit import (
    AsyncClosing,
    ChildSession,
    compose_start_error,
    configuration_start_error,
    failure_line,
    start_preamble,
)

from ._argv import resolve_command
from ._config import ClaudeConfig
from ._run import ClaudeChild

_log = logging.getLogger("subagent_claude")

CAPABILITIES = Capabilities(output_schema=True)
"""The CLI validates structured output itself (`--json-schema`); the rest cannot be enforced."""


class ClaudeProvider(AsyncClosing):
    """Runs each child as a fresh `claude` CLI process over its stream-json control protocol."""

    def __init__(self, config: ClaudeConfig) -> None:
        self._config = config

    @property
    def config(self) -> ClaudeConfig:
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
        """Spawns the CLI, runs the control handshake, and publishes the run.

        The prompt is sent as soon as the run is published.

        Raises:
            SubagentStartError: cancelled before the child was ready, no usable workspace,
                MCP servers asked for, no CLI found, the spawn or the handshake failed; the
                child's whole tree was torn down first.
        """
        config = self._config
        provider = config.provider_name
        cwd = start_preamble("Claude", provider, request, config.cwd)
        if request.mcp_servers:
            raise configuration_start_error("Claude", provider)
        command = resolve_command(config)
        if command is None:
            line = failure_line(provider, "process", "process-start")
            raise compose_start_error(
                "Claude", cancelled=False, startup_line=line, cleanup_line=None
            )
        session = self.new_session(ClaudeChild(config, cwd, command, request.output_schema))
        turn = session.begin_turn(
            request.prompt, cancel=request.cancel, output_schema=request.output_schema
        )
        await session.open(request.cancel)
        return session.run_of(turn, ends_session=True)

    def new_session(self, child: ClaudeChild) -> ChildSession:
        """The lifecycle that owns `child`, with this provider's deadlines and graces."""
        config = self._config
        return ChildSession(
            child,
            provider=config.provider_name,
            teardown=config.teardown,
            startup_timeout_seconds=config.startup_timeout_seconds,
            idle_timeout_seconds=config.idle_timeout_seconds,
            permission=config.permission,
            permission_protocol="Claude",
            log=_log,
        )

    async def aclose(self) -> None:
        """Nothing to release: the provider keeps no children between runs."""
