"""`ACPProvider`: the registry-facing side of the ACP backend."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import anyio
import anyio.to_thread
from subagent_core import (
    NO_CAPABILITIES,
    Capabilities,
    SubagentRequest,
    SubagentRun,
    SubagentStartError,
    aborted_before_start_text,
    compose_start_error,
    failure_line,
)

from ._config import ACPConfig, enterable_directory

_RUN_MODULE = "subagent_acp._run"


async def _load_run_module() -> None:
    """Imports the run (and with it the `acp` SDK, ~1 s of schema building) off the loop."""
    if _RUN_MODULE not in sys.modules:
        await anyio.to_thread.run_sync(importlib.import_module, _RUN_MODULE)


class ACPProvider:
    """Runs each child as a fresh ACP agent process and drives it as an ACP client.

    Capabilities are all false (a remote child's depth, tool filter, persona or output schema
    cannot be enforced from here) and the child does not inherit the parent's context.
    """

    def __init__(self, config: ACPConfig) -> None:
        self._config = config

    @property
    def config(self) -> ACPConfig:
        """The configuration this provider was built with."""
        return self._config

    @property
    def name(self) -> str:
        return self._config.provider_name

    @property
    def capabilities(self) -> Capabilities:
        return NO_CAPABILITIES

    @property
    def inherits_parent_context(self) -> bool:
        return False

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Spawns the child, runs `initialize` and `session/new`, and publishes the run.

        The prompt is sent as soon as the run is published.

        Raises:
            SubagentStartError: cancelled before the child was ready, no usable workspace, the
                command could not be spawned, or the handshake failed; the child's whole tree
                was torn down first.
        """
        if request.cancel.cancelled:
            raise SubagentStartError(aborted_before_start_text("ACP"))
        cwd = self._workspace(request)
        if cwd is None:
            line = failure_line(self._config.provider_name, "initialize", "configuration")
            raise compose_start_error("ACP", cancelled=False, startup_line=line, cleanup_line=None)
        await _load_run_module()
        if request.cancel.cancelled:
            raise SubagentStartError(aborted_before_start_text("ACP"))
        from ._run import ACPRun

        run = ACPRun(self._config, request, cwd)
        await run.open()
        return run

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
