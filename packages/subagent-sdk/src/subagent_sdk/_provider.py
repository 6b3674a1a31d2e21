"""`SDKProvider`: each run is a fresh SDK runtime, one fresh session and one prompt.

With `prewarm > 0` the fresh runtime usually comes from the provider's warm pool (spawned and
past `initialize` in the background, used for exactly one run); otherwise, or when none is
ready for the run's cwd, it is started cold.

Start: pre-cancel spawns nothing; the workspace is resolved before any spawn; spawn and
`initialize` run inside the cancel signal's scope; any failure rolls the runtime back before the
start error is raised. A published run prompts at once (its driver is one `OwnedTask`, also
inside the signal's scope) and settles from the root session's last turn end; a local cancel
settles `aborted` at once and `dispose()` closes the client.
"""

from __future__ import annotations

import logging
import math
import uuid
from dataclasses import replace
from pathlib import Path

import anyio
from subagent_core import (
    NO_CAPABILITIES,
    Capabilities,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
)
from subagent_core.kit import (
    AsyncClosing,
    EventBuffer,
    IdleDeadline,
    OwnedTask,
    compose_start_error,
    failure_line,
    new_run_id,
)

from ._client import OUTCOME_WAIT_SECONDS, SDKClient
from ._config import SDKConfig, usable_cwd
from ._errors import TransportClosedError
from ._mapping import error_category, turn_end_result
from ._pool import WarmPool
from ._transcript import RunTranscript

_log = logging.getLogger("subagent_sdk")


def new_session_id() -> str:
    """`session-` followed by 32 lowercase hex characters."""
    return "session-" + uuid.uuid4().hex


async def _failure_line(provider: str, stage: str, error: BaseException, client: SDKClient) -> str:
    """The safe line for an error at a stage: class only, plus observed exit facts."""
    category = error_category(error)
    if isinstance(error, TransportClosedError):
        outcome = await client.wait_outcome(OUTCOME_WAIT_SECONDS)
        if outcome is not None:
            return failure_line(
                provider, stage, category, exit_code=outcome.exit_code, signal=outcome.signal
            )
    return failure_line(provider, stage, category)


def _shutdown_line(provider: str, client: SDKClient) -> str:
    outcome = client.outcome
    return failure_line(
        provider,
        "shutdown",
        "unknown",
        exit_code=None if outcome is None else outcome.exit_code,
        signal=None if outcome is None else outcome.signal,
    )


class SDKProvider(AsyncClosing):
    """Runs children as SDK runtime processes; registered under `config.provider_name`."""

    def __init__(self, config: SDKConfig) -> None:
        self._config = config
        self._pool = (
            WarmPool(
                config.prewarm,
                self._spawn_ready,
                cwd=None if config.cwd is None else Path(config.cwd),
            )
            if config.prewarm > 0
            else None
        )

    @property
    def name(self) -> str:
        return self._config.provider_name

    @property
    def config(self) -> SDKConfig:
        return self._config

    @property
    def capabilities(self) -> Capabilities:
        """All false: a runtime's depth, tools, persona or schema cannot be enforced from here."""
        return NO_CAPABILITIES

    @property
    def inherits_parent_context(self) -> bool:
        return False

    def _client(self, cwd: Path) -> SDKClient:
        config = self._config
        # With `remote`, the placement opens the runtime in `cwd` where it runs.
        command = replace(config.child_command, cwd=cwd)
        return SDKClient(
            command.command,
            command.args,
            cwd=command.cwd,
            env=command.environment(),
            max_frame_bytes=config.max_frame_bytes,
            write_timeout_seconds=config.write_timeout_seconds,
            shutdown_timeout_seconds=config.shutdown_timeout_seconds,
            eof_grace_seconds=config.dispose_eof_grace_seconds,
            term_grace_seconds=config.dispose_grace_seconds,
            kill_grace_seconds=config.dispose_kill_grace_seconds,
            placed=command if command.remote is not None else None,
        )

    async def _start_client(self, client: SDKClient, cwd: Path) -> None:
        """Starts `client` and takes it past `initialize` for `cwd` (warm and cold alike)."""
        config = self._config
        startup = config.startup_timeout_seconds
        deadline = math.inf if startup is None else anyio.current_time() + startup
        await client.start()
        # What the spawn left of the startup bound; an expiry is `RequestTimeoutError`.
        remaining = None if startup is None else max(0.001, deadline - anyio.current_time())
        await client.initialize(
            cwd=str(cwd),
            provider=config.provider,
            model=config.model,
            max_tokens=config.max_tokens,
            timeout_seconds=remaining,
        )

    async def _spawn_ready(self, cwd: Path) -> SDKClient:
        """A runtime for `cwd`, started and past `initialize`; nothing is left when it raises."""
        client = self._client(cwd)
        try:
            await self._start_client(client, cwd)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await client.close()
            raise
        return client

    @property
    def warm_count(self) -> int:
        """Runtimes the warm pool holds now (idle, starting or closing); 0 without `prewarm`."""
        return 0 if self._pool is None else self._pool.population

    async def warm_up(self, cwd: Path | None = None) -> None:
        """Fills the warm pool now and waits until it is full (or a start failed).

        `cwd` is needed only when the config has none (the pool then warms for it). Without
        `prewarm` it does nothing. Start failures are host-log facts, never raised.
        """
        pool, config_cwd = self._pool, self._config.cwd
        target = Path(config_cwd) if config_cwd is not None else cwd
        if pool is not None and target is not None:
            await pool.warm_up(target)

    async def aclose(self) -> None:
        """Tears down every warm runtime and stops refilling (shielded, bounded; idempotent).

        Runs already started are not affected; later `start()` calls start cold. The registry
        calls it when the provider is unregistered (`unregister()` starts it without waiting,
        `unregister_and_close` waits), or call it yourself.
        """
        if self._pool is not None:
            await self._pool.aclose()

    async def _take_warm(self, cwd: Path, request: SubagentRequest) -> SDKClient | None:
        """A warm runtime for `cwd`, if one is ready.

        Raises:
            SubagentStartError: cancelled while taking it (it is closed first).
        """
        if self._pool is None:
            return None
        client: SDKClient | None = None
        with request.cancel.cancel_scope():
            client = await self._pool.take(cwd)
        if request.cancel.cancelled:
            if client is not None:
                await client.close()
            raise compose_start_error("SDK", cancelled=True, startup_line=None, cleanup_line=None)
        return client

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Takes a warm runtime or spawns one and completes `initialize`; publishes the run.

        Raises:
            SubagentStartError: cancelled, no usable workspace, or the runtime failed to start
                or answer `initialize`; the runtime is rolled back first.
        """
        config = self._config
        if request.cancel.cancelled:
            raise compose_start_error("SDK", cancelled=True, startup_line=None, cleanup_line=None)
        cwd = usable_cwd(config.cwd, request.cwd)
        if cwd is None:
            raise compose_start_error(
                "SDK",
                cancelled=False,
                startup_line=failure_line(self.name, "initialize", "configuration"),
                cleanup_line=None,
            )
        warm = await self._take_warm(cwd, request)
        if warm is not None:
            _log.debug("an SDK run starts on a warm runtime")
            return _SDKRun(self.name, warm, request, config)
        client = self._client(cwd)
        failure: Exception | None = None
        startup_line: str | None = None
        cancelled = False
        try:
            with request.cancel.cancel_scope():
                try:
                    await self._start_client(client, cwd)
                except Exception as error:
                    failure = error
                    # A cancel requested before the failure was classified wins.
                    cancelled = request.cancel.cancelled
            if failure is None and request.cancel.cancelled:
                cancelled = True
        except BaseException:
            with anyio.CancelScope(shield=True):
                await client.close()
            raise
        if failure is not None or cancelled:
            if failure is not None:
                _log.debug("SDK runtime failed to start: %r", failure)
                if not cancelled:
                    with anyio.CancelScope(shield=True):
                        startup_line = await _failure_line(self.name, "initialize", failure, client)
            gone = await client.close()
            raise compose_start_error(
                "SDK",
                cancelled=cancelled,
                startup_line=startup_line,
                cleanup_line=None if gone else _shutdown_line(self.name, client),
            ) from failure
        return _SDKRun(self.name, client, request, config)


class _SDKRun(SubagentRun):
    """One published runtime: its driver prompts and collects; `dispose()` closes it."""

    def __init__(
        self, provider: str, client: SDKClient, request: SubagentRequest, config: SDKConfig
    ) -> None:
        self.id = new_run_id()
        self._provider = provider
        self._client = client
        self._request = request
        self._buffer = EventBuffer()
        self._events = self._buffer
        # A fresh session only this run prompts: a receipt for another message cannot be ours.
        self._transcript = RunTranscript(
            new_session_id(),
            max_output_bytes=config.max_output_bytes,
            sole_prompt=True,
            on_event=self._buffer.publish,
        )
        self._settled = anyio.Event()
        self._result: SubagentResult | None = None
        self._dispose_lock = anyio.Lock()
        self._disposed = False
        self._dispose_text: str | None = None
        # Published now: from here a runtime silent for the whole bound ends the run.
        self._idle = IdleDeadline(config.idle_timeout_seconds)
        self._idle_expired = False
        client.idle = self._idle
        self._driver = OwnedTask.start(self._drive, name="subagent-sdk run")

    def _settle(self, result: SubagentResult) -> None:
        if self._result is None:
            self._result = result
            self._buffer.close()
            self._settled.set()

    def _settle_aborted(self) -> None:
        self._settle(SubagentResult(stop_reason="aborted", output=self._transcript.output))

    async def _drive(self) -> None:
        with self._request.cancel.cancel_scope():
            result = await self._collect_within_idle()
            if result is not None:
                self._settle(result)
        # Local cancel: settle now with the output so far; the process waits for dispose().
        self._settle_aborted()

    async def _collect_within_idle(self) -> SubagentResult | None:
        """`_collect`, ended by the idle bound; `None` when cancelled otherwise.

        The wire has no cancel method, so an expiry only settles the run: `dispose()` then
        shuts the runtime down through the usual bounded ladder.
        """
        idle = self._idle
        result: SubagentResult | None = None
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                if idle.seconds is not None:
                    tg.start_soon(self._watch_idle, idle, scope)
                result = await self._collect()
                tg.cancel_scope.cancel()
        if result is None and self._idle_expired:
            _log.debug("SDK run %s: the runtime was silent past idle_timeout_seconds", self.id)
            line = failure_line(self._provider, "session-run", "timeout")
            return SubagentResult(
                stop_reason="error", output=self._transcript.output, diagnostic=line
            )
        return result

    async def _watch_idle(self, idle: IdleDeadline, scope: anyio.CancelScope) -> None:
        await idle.expired()
        self._idle_expired = True
        scope.cancel()

    async def _collect(self) -> SubagentResult:
        transcript = self._transcript
        try:
            await self._client.run_prompt(
                transcript.session_id, self._request.prompt, transcript=transcript
            )
        except Exception as error:
            _log.debug("SDK run failed: %r", error)
            line = await _failure_line(self._provider, "session-run", error, self._client)
            return SubagentResult(stop_reason="error", output=transcript.output, diagnostic=line)
        stop_reason, diagnostic = turn_end_result(self._provider, transcript.turn_end)
        return SubagentResult(
            stop_reason=stop_reason, output=transcript.output, diagnostic=diagnostic
        )

    async def result(self) -> SubagentResult:
        await self._settled.wait()
        assert self._result is not None
        return self._result

    async def dispose(self) -> str | None:
        with anyio.CancelScope(shield=True):
            async with self._dispose_lock:
                if not self._disposed:
                    self._settle_aborted()
                    self._driver.cancel()
                    await self._driver.wait()
                    gone = await self._client.close()
                    self._dispose_text = (
                        None if gone else _shutdown_line(self._provider, self._client)
                    )
                    self._disposed = True
                return self._dispose_text
