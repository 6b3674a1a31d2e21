"""`CodexProvider`: the registry-facing side of the Codex backend."""

from __future__ import annotations

from pathlib import Path

from subagent_core import Capabilities, SubagentRequest, SubagentRun, SubagentStartError
from subagent_core.kit import (
    AsyncClosing,
    aborted_before_start_text,
    compose_start_error,
    failure_line,
)

from ._config import CodexConfig, enterable_directory
from ._run import CodexRun

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
        if request.cancel.cancelled:
            raise SubagentStartError(aborted_before_start_text("Codex"))
        cwd = self._workspace(request)
        if cwd is None or request.mcp_servers:
            line = failure_line(self._config.provider_name, "initialize", "configuration")
            raise compose_start_error(
                "Codex", cancelled=False, startup_line=line, cleanup_line=None
            )
        run = CodexRun(self._config, cwd, request)
        await run.open()
        return run

    async def aclose(self) -> None:
        """Nothing to release: every child belongs to its run."""

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
