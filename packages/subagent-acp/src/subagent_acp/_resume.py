"""A cold resume: a recorded ACP session continued by a fresh child.

An ACP agent keeps its own sessions where it always does (`harness acp-agent` under its
`--state-dir`, claude-agent-acp in its Claude config dir, gemini and qwen under their home
folders), so the provider gives it no per-handle home: a resume finds the session wherever the
first child's agent, run with the same command and environment, stored it. The parent keeps
only the session's record (`subagent_core`'s store: the child's session id, the workspace) and,
after `initialize`, asks the fresh child for that id:

- `session/resume` when the agent advertises `sessionCapabilities.resume` (nothing replayed);
- else `session/load` when it advertises `loadSession`: the agent replays the conversation as
  `session/update`s before it answers; they arrive while no turn runs, so they reach no turn's
  events or output;
- an agent that advertises neither cannot continue any session: the start fails
  `stage: new-session; category: configuration` (the configured agent cannot do what was
  asked, every time; not a miss of this one session);
- an error answer (the agent no longer knows the id, or refuses it) fails the start
  `stage: new-session; category: resume-miss`, never a fresh session in its place; an
  authentication error stays `authentication`.

Both requests carry the recorded workspace and the request's MCP servers (an agent forgets a
session's servers when its process ends).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal

from acp.schema import InitializeResponse
from subagent_core.kit import ChildFailure, Failure

from ._bridge import MCPServer, Session, classify_error
from ._options import SessionAnswer

_log = logging.getLogger("subagent_acp")

ReopenMethod = Literal["resume", "load"]


def reopen_method(initialized: InitializeResponse) -> ReopenMethod | None:
    """How this agent continues a stored session, by what its `initialize` advertised."""
    capabilities = initialized.agent_capabilities
    if capabilities is None:
        return None
    sessions = capabilities.session_capabilities
    if sessions is not None and sessions.resume is not None:
        return "resume"
    return "load" if capabilities.load_session else None


async def reopen(
    session: Session,
    initialized: InitializeResponse,
    session_id: str,
    cwd: str,
    servers: list[MCPServer],
    *,
    classify: Callable[[Exception], Awaitable[Failure]],
) -> SessionAnswer:
    """Continues `session_id` in this child, by the method its `initialize` advertised.

    The answer's modes and options are matched against the configured mode and model, as
    `session/new`'s are. `classify` is the child's rule for a failed handshake request.

    Raises:
        ChildFailure: `configuration` when the agent continues no session, `resume-miss` when
            it answered with an error (it no longer knows the id, or refuses it), else the
            failure `classify` found (a lost child, `authentication`).
    """
    method = reopen_method(initialized)
    if method is None:
        _log.info("ACP child: the agent offers neither session/resume nor session/load")
        raise ChildFailure(Failure("new-session", "configuration"))
    try:
        if method == "resume":
            return await session.resume_session(session_id, cwd, servers)
        return await session.load_session(session_id, cwd, servers)
    except Exception as error:
        failure = await classify(error)
        if classify_error(error) == "rpc-error" and failure.category == "transport":
            failure = Failure("new-session", "resume-miss")
        raise ChildFailure(failure) from error
