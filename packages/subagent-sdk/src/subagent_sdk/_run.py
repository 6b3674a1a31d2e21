"""The SDK runtime's protocol as the lifecycle's hooks: `initialize`, a prompt turn, goodbye.

The runtime's life — spawn, deadlines, settle-once, cancel, teardown — is the kit's
(`subagent_core.kit.ChildSession`); this module speaks the SDK wire through the connection
`SDKClient` stands on too (`_connection.SDKConnection`), over the process the kit spawned or a
warm runtime the pool took past `initialize` (`_pool`).

Handshake: `initialize {cwd, provider, model, maxTokens?}`. A turn is one `session/prompt` on
the child's own session (a fresh id nobody else prompts), collected from its receipt until the
root session is idle, and settled from the last root `turn/end` (`_facts`). The wire has no
cancel method, so nothing interrupts a turn given up early: the runtime runs it out, a later
prompt to the session queues behind it, and its receipt, should it arrive during a later turn,
is passed over. Goodbye: `shutdown` with stdin EOF right behind it (the ladder's EOF grace runs
from there).

The SDK names the lifecycle's own failures its way: a spawn failure is
`initialize` / `transport`, a process exit is `transport` with the figures (at `session-run`
during a turn), and the line of a tree not confirmed gone is `stage: shutdown`.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from pathlib import Path

import anyio
from subagent_core.kit import (
    ChildCommand,
    ChildFailure,
    ChildLink,
    ChildProtocol,
    Failure,
    ManagedProcess,
    Turn,
    TurnDriver,
)

from ._config import SDKConfig
from ._connection import SDKConnection
from ._errors import TransportClosedError
from ._facts import INITIALIZE_STAGE, RUN_STAGE, SHUTDOWN_STAGE, error_category, turn_end_facts
from ._transcript import RunTranscript

_log = logging.getLogger("subagent_sdk")


def new_session_id() -> str:
    """`session-` followed by 32 lowercase hex characters."""
    return "session-" + uuid.uuid4().hex


def runtime_command(config: SDKConfig, cwd: Path) -> ChildCommand:
    """The runtime's command in `cwd` (with `remote`, the placement opens it there)."""
    return replace(config.child_command, cwd=cwd)


def connect(config: SDKConfig, process: ManagedProcess) -> SDKConnection:
    """A connection with the config's bounds, attached to a spawned runtime."""
    connection = SDKConnection(
        max_frame_bytes=config.max_frame_bytes,
        write_timeout_seconds=config.write_timeout_seconds,
    )
    connection.attach(process)
    return connection


async def initialize(
    connection: SDKConnection, config: SDKConfig, cwd: Path, timeout_seconds: float | None
) -> None:
    """`initialize` with the config's model settings, for `cwd`.

    Raises:
        SDKError: as `SDKConnection.initialize` (`RequestTimeoutError` past `timeout_seconds`).
    """
    await connection.initialize(
        cwd=str(cwd),
        provider=config.provider,
        model=config.model,
        max_tokens=config.max_tokens,
        timeout_seconds=timeout_seconds,
    )


class SDKChild(ChildProtocol):
    """One SDK runtime: its connection, its one session, the prompts it gave up on."""

    kind = "SDK"
    stderr = "pipe"  # drained by the connection into a tail for host logs
    turn_stage = RUN_STAGE
    spawn_failure = Failure(INITIALIZE_STAGE, "transport")
    exit_stage = RUN_STAGE
    exit_category = "transport"
    teardown_stage = SHUTDOWN_STAGE

    def __init__(self, config: SDKConfig, cwd: Path, *, warm: SDKConnection | None = None) -> None:
        self._config = config
        self._cwd = cwd
        self._conn = warm
        """A warm runtime's connection (past `initialize`), else made at the handshake."""
        # The goodbye: the `shutdown` bound, and the rest of the EOF grace after it.
        self.close_seconds = config.shutdown_timeout_seconds + config.dispose_eof_grace_seconds
        self.session_id = new_session_id()
        """The one session every turn of this child prompts."""
        self.earlier_ids: set[str] = set()
        """Receipt ids of prompts given up before their receipt arrived."""
        self.lost_prompt = False
        """True once a prompt was given up before its receipt id was known: a receipt for
        another message can then be that one's, so it no longer proves a hostile runtime."""

    def command(self) -> ChildCommand:
        return runtime_command(self._config, self._cwd)

    def reading(self) -> bool:
        return self._conn is not None

    @property
    def config(self) -> SDKConfig:
        """The configuration the child runs with."""
        return self._config

    @property
    def connection(self) -> SDKConnection:
        """The runtime's connection (exists once the handshake began)."""
        assert self._conn is not None
        return self._conn

    async def handshake(self, link: ChildLink) -> None:
        conn = self._conn
        if conn is not None:
            conn.on_line = link.touch  # a warm runtime: spawned and initialized already
            return
        conn = self._conn = connect(self._config, link.proc)
        conn.on_line = link.touch
        link.start_soon(conn.serve)
        try:
            await initialize(conn, self._config, self._cwd, None)
        except Exception as error:
            _log.debug("SDK runtime failed to start: %r", error)
            raise ChildFailure(await self.failure(link, INITIALIZE_STAGE, error)) from error

    async def failure(self, link: ChildLink, stage: str, error: BaseException) -> Failure:
        """Classifies an error by its class; a closed connection waits briefly for the exit
        facts (then `transport` with the figures)."""
        if isinstance(error, TransportClosedError) and await link.wait_exit():
            return link.exit_failure(stage)
        return Failure(stage, error_category(error))

    def begin_turn(self, link: ChildLink, turn: Turn) -> TurnDriver:
        return SDKTurn(self, link, turn)

    async def close_child(self, link: ChildLink) -> None:
        """`shutdown` with EOF right behind it; a failed request is only logged, with whether
        the runtime then exited within the rest of its EOF grace."""
        conn = self._conn
        if conn is None:
            return
        config = self._config
        error = await conn.goodbye(config.shutdown_timeout_seconds, link.close_stdin)
        if error is not None:
            now = anyio.current_time()
            sent = now if link.eof_sent_at is None else link.eof_sent_at
            rest = config.dispose_eof_grace_seconds - (now - sent)
            gone = await link.wait_exit(max(0.0, rest))
            _log.debug("SDK shutdown request failed (runtime gone: %s): %r", gone, error)


class SDKTurn(TurnDriver):
    """One `session/prompt` on the child's session, collected until the root session is idle."""

    def __init__(self, child: SDKChild, link: ChildLink, turn: Turn) -> None:
        self._child = child
        self._link = link
        self._turn = turn
        # Nobody else prompts this session: a receipt for another message cannot be ours,
        # unless it is one of the child's own given-up prompts.
        self._transcript = RunTranscript(
            child.session_id,
            max_output_bytes=child.config.max_output_bytes,
            sole_prompt=not child.lost_prompt,
            on_event=turn.publish,
            earlier_ids=child.earlier_ids,
        )

    @property
    def output(self) -> str:
        return self._transcript.output

    async def run(self) -> None:
        child, transcript = self._child, self._transcript
        try:
            await child.connection.run_prompt(
                child.session_id, self._turn.prompt, transcript=transcript
            )
        except Exception as error:
            _log.debug("SDK run failed: %r", error)
            raise ChildFailure(await child.failure(self._link, RUN_STAGE, error)) from error
        finally:
            if not transcript.receipt_seen:
                if transcript.message_id is None:
                    child.lost_prompt = True
                else:
                    child.earlier_ids.add(transcript.message_id)
        self.finished = True
        stop_reason, failure = turn_end_facts(transcript.turn_end)
        if failure is None:
            self._turn.settle_quietly(stop_reason)
        else:
            self._turn.settle(stop_reason, failure)
