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

from subagent_core import (
    Capabilities,
    SessionRequest,
    SubagentRequest,
    SubagentRun,
    SubagentStartError,
)
from subagent_core.kit import (
    ChildProvider,
    ChildSession,
    ChildTurns,
    SessionSlot,
    compose_start_error,
    failure_line,
)

from ._argv import resolve_command
from ._config import ClaudeConfig
from ._run import ClaudeChild, resumable

_log = logging.getLogger("subagent_claude")

SHARED_CONFIG = ("settings.json", "CLAUDE.md", "agents", "commands", "skills")
"""What a session's own config dir takes from the user's (linked, never copied): the settings
and instructions `read_user_settings=True` applies. Not the login (`.credentials.json` and the
keychain are read in place, `ClaudeConfig.child_command`) and not `.claude.json`, the CLI's
own state, which it rewrites."""


class ClaudeProvider(ChildProvider[ClaudeConfig]):
    """Runs each child as a fresh `claude` CLI process over its stream-json control protocol.

    MCP servers are the CLI's own configuration: a request that asks for some fails its start.
    """

    kind = "Claude"
    takes_mcp_servers = False
    offered = Capabilities(output_schema=True, sessions=True, resume=True)
    """The CLI validates structured output itself (`--json-schema`, one-shot runs only) and
    keeps a conversation for several turns, resumable from its transcript (in a session's own
    config dir, on this host); the rest cannot be enforced."""

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Spawns the CLI, runs the control handshake, and publishes the run.

        The prompt is sent as soon as the run is published.

        Raises:
            SubagentStartError: cancelled before the child was ready, no usable workspace,
                MCP servers asked for, no CLI found, the spawn or the handshake failed; the
                child's whole tree was torn down first.
        """
        cwd = self.workspace_for(request)
        child = ClaudeChild(self._config, cwd, self._command(), request.output_schema)
        session = self.new_session(child)
        return await session.one_shot(request)

    async def open_turns(
        self, request: SessionRequest, slot: SessionSlot, *, resume: bool
    ) -> ChildTurns:
        """A CLI process that takes several turns, with a state dir a resumable one; or a fresh
        one that continues the recorded conversation (`--resume` in the session's own config
        dir).

        Raises:
            SubagentStartError: `resume-miss` when the CLI no longer holds the conversation,
                `configuration` for another workspace, else as `start`.
        """
        config = self._config
        cwd = self.session_workspace_for(request, slot, resume=resume)
        record = slot.record
        if resume and not resumable(record.child_session):
            line = failure_line(self.name, "initialize", "resume-miss")
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
        # `--json-schema` is an option of the CLI process, fixed when it starts.
        return ChildTurns(session, slot, request, turn_output_schema=False)

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
        return ChildSession.configured(child, self._config, permission_protocol="Claude", log=_log)


def _share_config(base: Path, config_dir: Path) -> None:
    """Links the user's settings and instructions into a session's own config dir (once)."""
    for name in SHARED_CONFIG:
        source, target = base / name, config_dir / name
        try:
            if source.exists() and not target.exists() and not target.is_symlink():
                target.symlink_to(source, target_is_directory=source.is_dir())
        except OSError:
            _log.info("Claude session: could not link the user's %s", name)
