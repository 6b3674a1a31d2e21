"""`ClaudeProvider`: the registry-facing side of the Claude Code backend.

Each run is a fresh CLI process (no pool: the CLI's start is a fraction of a second, and a
child reused across runs would carry one run's session into the next).
"""

from __future__ import annotations

from pathlib import Path

from subagent_core import Capabilities, SubagentRequest, SubagentRun, SubagentStartError
from subagent_core.kit import (
    AsyncClosing,
    aborted_before_start_text,
    compose_start_error,
    failure_line,
)

from ._argv import resolve_command
from ._config import ClaudeConfig, enterable_directory

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
        if request.cancel.cancelled:
            raise SubagentStartError(aborted_before_start_text("Claude"))
        provider = self._config.provider_name
        cwd = self._workspace(request)
        if cwd is None or request.mcp_servers:
            line = failure_line(provider, "initialize", "configuration")
            raise compose_start_error(
                "Claude", cancelled=False, startup_line=line, cleanup_line=None
            )
        command = resolve_command(self._config)
        if command is None:
            line = failure_line(provider, "process", "process-start")
            raise compose_start_error(
                "Claude", cancelled=False, startup_line=line, cleanup_line=None
            )
        from ._run import ClaudeRun

        run = ClaudeRun(self._config, cwd, command, request)
        await run.open()
        return run

    async def aclose(self) -> None:
        """Nothing to release: the provider keeps no children between runs."""

    def _workspace(self, request: SubagentRequest) -> Path | None:
        """The configured cwd, else the request's; it must be absolute and enterable."""
        if self._config.cwd is not None:
            path = self._config.cwd
        else:
            cwd: object = request.cwd
            if not isinstance(cwd, str | Path) or str(cwd) == "":
                return None
            path = Path(cwd)
            if not path.is_absolute():
                return None
        return path if enterable_directory(path) else None
