"""`CodexProvider`: the registry-facing side of the Codex backend."""

from __future__ import annotations

import logging
from pathlib import Path

from subagent_core import Capabilities, SessionRequest, SubagentRequest, SubagentRun, Usage
from subagent_core.kit import ChildProvider, ChildSession, ChildTurns, SessionSlot

from ._config import CodexConfig
from ._run import CodexChild

_log = logging.getLogger("subagent_codex")

_SHARED_HOME_FILES = ("config.toml", "auth.json")
"""What a session's own `CODEX_HOME` takes from the user's: settings and login (linked, never
copied), so only the session's rollouts live apart."""


class CodexProvider(ChildProvider[CodexConfig]):
    """Runs each child as a fresh `codex app-server` process speaking its JSON-RPC protocol.

    The child does not inherit the parent's context: it sees the prompt and its workspace. MCP
    servers are codex's own configuration: a request that asks for some fails its start.
    """

    kind = "Codex"
    takes_mcp_servers = False
    offered = Capabilities(output_schema=True, sessions=True, resume=True)
    """Codex enforces an output schema itself (`turn/start.outputSchema`) and keeps a thread
    for several turns, resumable from its rollout (in a session's own `CODEX_HOME`, on this
    host); depth, tool filter and persona cannot be enforced from outside."""

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Spawns the child, runs the handshake and an ephemeral `thread/start`, publishes.

        The turn starts as soon as the run is published.

        Raises:
            SubagentStartError: cancelled before the child was ready, no usable workspace, MCP
                servers requested (codex takes its own from its config), the command could not
                be spawned, or the handshake failed; the child's whole tree was torn down first.
        """
        session = self.new_session(CodexChild(self._config, self.workspace_for(request)))
        return await session.one_shot(request)

    async def open_turns(
        self, request: SessionRequest, slot: SessionSlot, *, resume: bool
    ) -> ChildTurns:
        """A child whose thread takes several turns, with a state dir a resumable one; or a
        fresh child that continues the recorded thread (`thread/resume` in the session's own
        `CODEX_HOME`).

        Raises:
            SubagentStartError: `resume-miss` when codex no longer holds the thread,
                `configuration` for another workspace, else as `start`.
        """
        config = self._config
        cwd = self.session_workspace_for(request, slot, resume=resume)
        home = slot.child_state if config.remote is None else None
        if home is not None:
            _share_home(config.base_home(), home)
        child = CodexChild(
            config,
            cwd,
            home=home,
            resume_thread=slot.record.child_session if resume else None,
            resumed_totals=_tokens(slot.record.usage) if resume else None,
            on_thread=lambda thread: slot.update(child_session=thread),
        )
        session = self.new_session(child)
        await session.open(request.cancel)
        return ChildTurns(session, slot, request)

    def new_session(self, child: CodexChild) -> ChildSession:
        """The lifecycle that owns `child`, with this provider's deadlines and graces."""
        return ChildSession.configured(
            child,
            self._config,
            permission_protocol="Codex",
            extra_dispose_seconds=self._config.write_timeout_seconds + 2.0,
            log=_log,
        )


def _tokens(usage: Usage | None) -> Usage | None:
    """The token counts of a session's recorded usage (what codex restores on a resume)."""
    if usage is None:
        return None
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cached_input_tokens,
    )


def _share_home(base: Path, home: Path) -> None:
    """Links the user's codex settings and login into a session's own home (once)."""
    for name in _SHARED_HOME_FILES:
        source, target = base / name, home / name
        if source.is_file() and not target.exists() and not target.is_symlink():
            try:
                target.symlink_to(source)
            except OSError:
                _log.info("Codex session: could not link the user's %s", name)
