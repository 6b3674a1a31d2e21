"""The ACP protocol as the lifecycle's hooks: handshake, a turn, its interrupt.

The child's life — spawn, deadlines, settle-once, cancel, teardown — is the kit's
(`subagent_core.kit.ChildSession`); this module only speaks ACP, over the SDK connection of
`_bridge`.

Handshake: `initialize` (a warm child's pool sent it already) → `session/new` with the
request's MCP servers (or, for a cold resume, `session/resume` / `session/load` of the recorded
session: `_resume`) → the configured mode and model. A turn is one `session/prompt` on that
session, as many as the holder asks for: its updates become the turn's events, output and
usage (`_transcript`; each turn its own part of the child's cumulative cost), its stop reason
settles it (`_facts`); a turn the child did not end (a cancel, the idle deadline, a dispose, a
crossed budget) is interrupted with a `session/cancel` notification. The prompt request is sent
by the child's one prompter task (`_prompter`), so it hears its answer even after its turn was
interrupted: the next turn's prompt waits for that answer, so neither it nor the updates before
it can reach the next turn.

The child's service task (its terminals, then the connection's close) is `_services`, started
for a cold child or one with terminals (a warm child's pool closes its connection); the
recorded session a cold resume continues is reopened by `_resume`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio
from acp.schema import InitializeResponse
from subagent_core import Cost, SubagentRequest, SubagentResult, Usage
from subagent_core.kit import (
    ChildCommand,
    ChildFailure,
    ChildLink,
    ChildProtocol,
    ChildSession,
    Failure,
    Turn,
    TurnDriver,
)

from ._bridge import PromptAnswer, Session, classify_error
from ._config import ACPConfig
from ._facts import map_stop_reason, unexpected
from ._fs import WorkspaceFiles
from ._mcp import mcp_servers_for
from ._options import SessionAnswer, apply_option, session_options
from ._prompter import Prompter
from ._resume import reopen
from ._services import AFTER_LADDER_SECONDS, ChildServices
from ._spawn import capabilities_for, open_session
from ._transcript import Transcript
from ._wire import SessionUpdate

_log = logging.getLogger("subagent_acp")

T = TypeVar("T")


def new_session(config: ACPConfig, child: ACPChild) -> ChildSession:
    """The lifecycle that owns `child`, with `config`'s deadlines, graces and policy."""
    return ChildSession.configured(
        child,
        config,
        permission_protocol="ACP",
        reject_with_option=False,
        extra_dispose_seconds=AFTER_LADDER_SECONDS,
        log=_log,
    )


class ACPChild(ChildProtocol):
    """One ACP agent process: its SDK connection, its session, the turn it is running.

    A warm child arrives with the connection and the `initialize` answer its pool got; every
    child is given its request (`serve`) before the handshake. `resume` is the recorded session
    a cold resume continues; `on_session` hears a new session's id (child-controlled text: for
    the session record only).
    """

    kind = "ACP"

    def __init__(
        self,
        config: ACPConfig,
        cwd: Path,
        *,
        warm: tuple[Session, InitializeResponse, Prompter] | None = None,
        resume: str | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> None:
        self._config = config
        self._cwd = cwd
        self._resume = resume
        self._on_session = on_session
        self.cost_counted: Cost | None = None
        """The child's cumulative cost as far as its turns have counted it."""
        self.stderr = config.child_stderr
        self._session: Session | None = None if warm is None else warm[0]
        self._initialized: InitializeResponse | None = None if warm is None else warm[1]
        self._request: SubagentRequest | None = None
        self.session_id: str
        """The ACP session every turn prompts (set once the handshake opened or reopened it)."""
        self._driver: ACPTurn | None = None
        self.prompter = Prompter() if warm is None else warm[2]
        """Sends each turn's prompt (a warm child's pool started its task already)."""
        self._services = ChildServices(cwd, terminals=config.terminal)
        self.lost = False
        """Set by a warm pool that lost the child before it could be driven."""
        self.on_under_way: Callable[[], None] | None = None
        """Called once, at the child's first update or its first turn's settlement (a warm
        pool starts the replacement then, not while the hand-over competes with it)."""

    def serve(self, request: SubagentRequest) -> None:
        """Sets the request this child serves (once, before the handshake)."""
        self._request = request

    def command(self) -> ChildCommand:
        return self._config.child_command(self._cwd)

    def reading(self) -> bool:
        session = self._session
        return session is not None and session.transport.broken is None

    @property
    def session(self) -> Session:
        """The SDK connection (exists once the handshake began)."""
        assert self._session is not None
        return self._session

    @property
    def max_output_bytes(self) -> int:
        """The most output text a turn keeps."""
        return self._config.max_output_bytes

    # -- the handshake ---------------------------------------------------------------------------

    async def handshake(self, link: ChildLink) -> None:
        config, request = self._config, self._request
        assert request is not None, "ACPChild.serve() comes before the handshake"
        opened = self._session is None
        if self._session is None:
            self._session = open_session(link.proc, config)
        session = self._session
        session.client.bind(
            self._current_turn,
            files=None if config.fs == "none" else WorkspaceFiles(self._cwd),
            writes=config.fs == "read-write",
            allow_writes=request.allow_writes,
        )
        session.transport.on_update = self._on_update
        session.transport.on_frame = link.touch
        if opened:
            link.start_soon(self.prompter.serve)
        if opened or config.terminal:
            # A warm child's connection is its pool's to close and its prompter runs already:
            # without terminals its hand-over starts no task, the costliest step it could take.
            link.start_soon(self._services.serve, link, session)
        initialized = self._initialized
        if initialized is None:
            initialized = await self._call(link, session.initialize(capabilities_for(config)))
        link.stage = "new-session"
        servers = mcp_servers_for(request.mcp_servers, initialized)
        if servers is None:
            _log.info("ACP child: the child does not take the request's MCP servers")
            raise ChildFailure(Failure("new-session", "configuration"))
        response: SessionAnswer
        if self._resume is not None:
            classify = partial(self.failure, link, "new-session")
            response = await reopen(
                session, initialized, self._resume, str(self._cwd), servers, classify=classify
            )
            self.session_id = self._resume
        else:
            answer = await self._call(link, session.new_session(str(self._cwd), servers))
            if answer.session_id == "":
                _log.info("ACP child: the child returned no usable session id")
                raise ChildFailure(Failure("new-session", "protocol"))
            response, self.session_id = answer, answer.session_id
            if self._on_session is not None:
                self._on_session(answer.session_id)
        for step in session_options(config, response):
            if step is None:
                _log.info("ACP child: the child does not offer the configured mode/model")
                raise ChildFailure(Failure("new-session", "configuration"))
            await self._call(link, apply_option(session, self.session_id, step))

    async def _call(self, link: ChildLink, request: Awaitable[T]) -> T:
        """One handshake request; a refused or lost one raises its classified failure."""
        stage = link.stage
        try:
            return await request
        except Exception as error:
            raise ChildFailure(await self.failure(link, stage, error)) from error

    async def failure(self, link: ChildLink, stage: str, error: Exception) -> Failure:
        """Classifies a failed request by the package README's rules (the raw error is logged
        on this package's logger only)."""
        _log.info("ACP child: %s failed", stage, exc_info=error)
        kind = classify_error(error)
        if kind == "connection-lost":
            await link.wait_exit()  # the process outcome, if it is coming, decides
        if self.session.transport.broken is not None:
            return Failure(stage, "transport")  # an over-long line or a stalled write
        if kind == "auth-required":
            return Failure(stage, "authentication")
        if kind == "rpc-error":
            return Failure(stage, "transport")
        if kind == "connection-lost":
            if link.exited:
                return link.exit_failure(self.exit_stage if stage == self.turn_stage else stage)
            return Failure(stage, "transport")
        return unexpected(stage)

    # -- the goodbye -----------------------------------------------------------------------------

    async def close_child(self, link: ChildLink) -> None:
        """Interrupts a prompt still running (a dispose mid-turn) and ends the terminals."""
        self._services.close()
        if self._driver is not None:
            await self._driver.interrupt()
        await self._services.wait_terminals_ended()

    # -- what the connection reports (the SDK's reader) ------------------------------------------

    def _current_turn(self) -> Turn | None:
        driver = self._driver
        return None if driver is None else driver.turn

    def _on_update(self, update: SessionUpdate) -> None:
        if self._driver is not None:
            self._driver.on_update(update)
        self._under_way()

    def _under_way(self, result: SubagentResult | None = None) -> None:
        hook, self.on_under_way = self.on_under_way, None
        if hook is not None:
            hook()

    # -- turns -----------------------------------------------------------------------------------

    def begin_turn(self, link: ChildLink, turn: Turn) -> TurnDriver:
        driver = ACPTurn(self, link, turn)
        self._driver = driver
        turn.on_settle.append(self._under_way)
        return driver


class ACPTurn(TurnDriver):
    """One `session/prompt` on the child's session, followed to its answer."""

    def __init__(self, child: ACPChild, link: ChildLink, turn: Turn) -> None:
        self._child = child
        self._link = link
        self.turn = turn
        self._transcript = Transcript(
            child.max_output_bytes, turn.publish, cost_before=child.cost_counted
        )
        self._answer: PromptAnswer | None = None
        self._error: Exception | None = None
        self._sent = False
        self._interrupted = False
        self.answered = anyio.Event()
        """Set once the prompt request ended (answered, refused, or the wire lost)."""

    @property
    def output(self) -> str:
        return self._transcript.output

    @property
    def usage(self) -> Usage | None:
        return self._transcript.usage

    def on_update(self, update: SessionUpdate) -> None:
        """An update of this turn's prompt (the transport drops those after its answer)."""
        if self._sent and not self.turn.settled:
            self._transcript.on_update(update)
            self._child.cost_counted = self._transcript.reported_cost

    async def run(self) -> None:
        child, turn = self._child, self.turn
        child.prompter.ask(self)
        await self.answered.wait()
        error = self._error
        if error is not None:
            raise ChildFailure(await child.failure(self._link, child.turn_stage, error)) from error
        assert self._answer is not None
        acp_stop_reason, usage = self._answer
        self._transcript.on_answer(usage)
        stop_reason, failure = map_stop_reason(acp_stop_reason)
        if stop_reason == "aborted" and (turn.cancel.cancelled or turn.stop_requested):
            turn.abort()  # we asked: a local cancel, not a remote abort
        else:
            turn.settle(stop_reason, failure)

    async def ask(self) -> None:
        """The prompt request, sent by the child's prompter: its answer ends the turn for the
        child even when the turn was settled (interrupted) before it came. A turn that ended
        while earlier prompts were still unanswered sends nothing."""
        child, turn = self._child, self.turn
        try:
            if turn.settled or turn.idle_expired or turn.cancel.cancelled or turn.stop_requested:
                return
            self._sent = True
            self._answer = await child.session.prompt(
                child.session_id, turn.prompt, traceparent=turn.traceparent
            )
            self.finished = True
        except Exception as error:
            self._error = error
            self.finished = True  # refused, or the wire is gone: nothing left to interrupt
        finally:
            self.answered.set()

    async def interrupt(self) -> None:
        """`session/cancel`, once: abandoning the request sends nothing to the child."""
        if not self._sent or self.finished or self._interrupted:
            return
        self._interrupted = True
        child = self._child
        try:
            await child.session.cancel(child.session_id)
        except Exception as error:
            _log.debug("ACP child: session/cancel was not delivered", exc_info=error)
