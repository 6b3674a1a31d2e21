"""`ClaudeProvider`: the registry-facing side of the Claude Code backend.

Each run is a fresh CLI process (no pool: the CLI's start is a fraction of a second, and a
child reused across runs would carry one run's session into the next). A session keeps its
process for several turns; a resumable one runs the CLI with a config dir of its own under the
session's state dir, so a fresh process finds the transcript by `--resume` after the first is
gone.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

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
    compose_start_error,
    configuration_start_error,
    failure_line,
    session_workspace,
    start_preamble,
)

from ._argv import resolve_command
from ._config import ClaudeConfig
from ._run import ClaudeChild, resumable

_log = logging.getLogger("subagent_claude")

CAPABILITIES = Capabilities(output_schema=True, sessions=True, resume=True)
"""The CLI validates structured output itself (`--json-schema`, one-shot runs only) and keeps a
conversation for several turns, resumable from its transcript; the rest cannot be enforced."""

SHARED_CONFIG = ("settings.json", "CLAUDE.md", "agents", "commands", "skills")
"""What a session's own config dir takes from the user's (linked, never copied): the settings
and instructions `read_user_settings=True` applies. Not the login (`.credentials.json` and the
keychain are read in place, `ClaudeConfig.child_command`) and not `.claude.json`, the CLI's
own state, which it rewrites."""


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
        if self._config.remote is not None:
            # A session's own config dir lives on this host, not where a placement runs claude.
            return Capabilities(output_schema=True, sessions=True)
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
        cwd = start_preamble("Claude", config.provider_name, request, config.cwd)
        if request.mcp_servers:
            raise configuration_start_error("Claude", config.provider_name)
        command = self._command()
        session = self.new_session(ClaudeChild(config, cwd, command, request.output_schema))
        turn = session.begin_turn(
            request.prompt,
            cancel=request.cancel,
            output_schema=request.output_schema,
            budget=request.budget,
        )
        await session.open(request.cancel)
        return session.run_of(turn, ends_session=True)

    async def open_session(self, request: SessionRequest, slot: SessionSlot) -> ChildTurns:
        """A CLI process that takes several turns; with a state dir, a resumable one.

        Raises:
            SubagentStartError: as `start`.
        """
        return await self._open(request, slot, resume=False)

    async def resume_session(self, request: SessionRequest, slot: SessionSlot) -> ChildTurns:
        """A fresh CLI process that continues the recorded conversation (`--resume` in the
        session's own config dir).

        Raises:
            SubagentStartError: `resume-miss` when the CLI no longer holds the conversation,
                `configuration` for another workspace, else as `start`.
        """
        return await self._open(request, slot, resume=True)

    async def _open(
        self, request: SessionRequest, slot: SessionSlot, *, resume: bool
    ) -> ChildTurns:
        config = self._config
        provider = config.provider_name
        cwd = session_workspace("Claude", provider, request, config.cwd, slot, resume=resume)
        if request.mcp_servers:
            raise configuration_start_error("Claude", provider)
        record = slot.record
        if resume and not resumable(record.child_session):
            line = failure_line(provider, "initialize", "resume-miss")
            raise SubagentStartError(line, line)
        command = self._command()
        config_dir = slot.child_state if config.remote is None else None
        if config_dir is not None:
            _share_config(config.user_config_dir(), config_dir)
        spent = record.usage.cost if resume and record.usage is not None else None

        def remember(session_id: str) -> None:
            try:
                slot.update(child_session=session_id)
            except OSError:
                _log.info("Claude session: the record could not be written")

        child = ClaudeChild(
            config,
            cwd,
            command,
            None,
            config_dir=config_dir,
            resume=record.child_session if resume else None,
            on_session=remember,
            spent_usd=spent.amount if spent is not None and spent.currency == "USD" else 0.0,
        )
        session = self.new_session(child)
        await session.open(request.cancel)
        return ClaudeTurns(session, slot, request)

    def _command(self) -> str:
        """The CLI to run.

        Raises:
            SubagentStartError: none can be found (`process-start`).
        """
        command = resolve_command(self._config)
        if command is None:
            line = failure_line(self._config.provider_name, "process", "process-start")
            raise compose_start_error(
                "Claude", cancelled=False, startup_line=line, cleanup_line=None
            )
        return command

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
        """Nothing to release: every child belongs to its run or session."""


class ClaudeTurns(ChildTurns):
    """A Claude session's turns. `--json-schema` is an option of the CLI process, fixed when it
    starts, so a session turn cannot ask for an output schema: refused before it is sent."""

    async def run(
        self,
        prompt: str,
        *,
        cancel: CancelSignal | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> SubagentRun:
        if output_schema is not None:
            raise SubagentError(
                "UNSUPPORTED_CAPABILITY",
                f'subagent provider "{self._child.provider}" takes an output schema in a '
                "one-shot run only, not in a session turn",
            )
        return await super().run(prompt, cancel=cancel)


def _share_config(base: Path, config_dir: Path) -> None:
    """Links the user's settings and instructions into a session's own config dir (once)."""
    for name in SHARED_CONFIG:
        source, target = base / name, config_dir / name
        try:
            if source.exists() and not target.exists() and not target.is_symlink():
                target.symlink_to(source, target_is_directory=source.is_dir())
        except OSError:
            _log.info("Claude session: could not link the user's %s", name)
