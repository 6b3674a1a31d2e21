"""`SDKClient`: one runtime process, one JSON-RPC connection, many subscriptions.

The client owns the managed process (stderr piped and drained continuously), a reader that
resolves responses (in any order; unknown ids ignored) and fans notifications out to
subscriptions, and the shutdown sequence. When the runtime's output ends every pending request
fails with `TransportClosedError`; queued notifications stay readable.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Final, Self

import anyio
import anyio.abc
from subagent_core import ManagedProcess, ProcessOutcome, SpawnError, open_managed_process

from ._background import BackgroundTask
from ._errors import JSONRPCError, RequestTimeoutError, SDKError, TransportClosedError
from ._framing import (
    DEFAULT_MAX_FRAME_BYTES,
    FrameReader,
    FrameTooLargeError,
    FrameWriter,
    Notification,
    Request,
    Response,
    new_request_id,
)
from ._json import JSONObject, JSONValue
from ._stderr import StderrTail
from ._subscriptions import NotificationFilter, SessionTree, Subscription
from ._transcript import RunTranscript
from ._wire import (
    INITIALIZE,
    METHOD_NOT_FOUND,
    SESSION_PROMPT,
    SHUTDOWN,
    InitializeParams,
    InitializeResult,
    PromptParams,
    PromptResult,
)

_log = logging.getLogger("subagent_sdk")

OUTCOME_WAIT_SECONDS: Final = 1.0
"""How long a closed connection waits for the runtime's exit facts (diagnostics.md: 1.0 s)."""


class _Pending:
    """The reply slot of one request."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: JSONValue = None
        self.error: SDKError | None = None

    def resolve(self, response: Response) -> None:
        if response.error is not None:
            error = response.error
            self.error = JSONRPCError(error.code, error.message, error.data)
        else:
            self.result = response.result
        self.done.set()

    def fail(self, message: str) -> None:
        if not self.done.is_set():
            self.error = TransportClosedError(message)
            self.done.set()


class SDKClient:
    """Drives one SDK runtime process over newline-delimited JSON-RPC on its stdio.

    Use as `async with SDKClient(...) as client:` or call `start()` and, on every path,
    `close()` (memoized; safe from any task). All errors raised are `SDKError` subclasses.

    `env` is the runtime's whole environment (`None` inherits this process's unchanged; the
    provider passes `subagent_core.child_env(...)`, which drops credential-shaped names).
    The reader and stderr drain run in one task the client owns (asyncio backend), so a client
    started in one task may be closed from another.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        shutdown_timeout_seconds: float = 1.0,
        eof_grace_seconds: float = 6.0,
        term_grace_seconds: float = 3.0,
        kill_grace_seconds: float = 3.0,
    ) -> None:
        self._argv = [command, *args]
        self._cwd = None if cwd is None else os.fspath(cwd)
        self._env = None if env is None else dict(env)
        self._max_frame_bytes = max_frame_bytes
        self._shutdown_timeout_seconds = shutdown_timeout_seconds
        self._graces = (eof_grace_seconds, term_grace_seconds, kill_grace_seconds)
        self._supervisor: BackgroundTask | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._spawn_error: Exception | None = None
        self._process: ManagedProcess | None = None
        self._writer: FrameWriter | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._pending: dict[str, _Pending] = {}
        self._closed_message: str | None = None
        self._stderr = StderrTail()
        self._tree = SessionTree()
        self._subscriptions: list[Subscription] = []
        self._close_lock = anyio.Lock()
        self._close_result: bool | None = None

    # ---- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Spawns the runtime and starts reading its output.

        Raises:
            TransportClosedError: the process could not be spawned (the `SpawnError` reason is
                in the message and the error is the `__cause__`).
        """
        if self._supervisor is not None:
            raise RuntimeError("SDKClient.start() was already called")
        self._supervisor = BackgroundTask(self._supervise, name="subagent-sdk client")
        try:
            await self._ready.wait()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.close()
            raise
        error = self._spawn_error
        if error is not None:
            reason = error.reason if isinstance(error, SpawnError) else "os-error"
            raise TransportClosedError(f"could not start the SDK runtime ({reason})") from error

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> bool:
        """Stops the runtime; True when its process tree is confirmed gone.

        Memoized, shielded and bounded: a `shutdown` request limited to
        `shutdown_timeout_seconds`, then the managed ladder (EOF → SIGTERM → SIGKILL). A failed
        `shutdown` request is only logged. Never raises for a cleanup failure.
        """
        gone = False
        with anyio.CancelScope(shield=True):
            async with self._close_lock:
                if self._close_result is None:
                    self._close_result = await self._close()
                gone = self._close_result
        return gone

    async def _close(self) -> bool:
        if self._supervisor is None:
            self._fail_transport("the SDK client was closed before it started")
            return True
        await self._ready.wait()
        process = self._process
        gone = True
        if process is not None:
            shutdown_error: SDKError | None = None
            if self._closed_message is None:
                try:
                    await self.shutdown(timeout_seconds=self._shutdown_timeout_seconds)
                except SDKError as error:
                    shutdown_error = error
            gone = await process.terminate(*self._graces)
            if shutdown_error is not None:
                _log.debug(
                    "SDK shutdown request failed (runtime gone: %s): %r", gone, shutdown_error
                )
            if not gone:
                _log.warning("the SDK runtime's process tree is not confirmed gone")
        self._stop.set()
        await self._supervisor.wait()
        self._fail_transport("the SDK client is closed")
        return gone

    @property
    def pid(self) -> int | None:
        """The runtime's pid once spawned."""
        return None if self._process is None else self._process.pid

    @property
    def outcome(self) -> ProcessOutcome | None:
        """The runtime's exit facts once it was reaped, else `None`."""
        return None if self._process is None else self._process.outcome

    @property
    def stderr_lines(self) -> list[str]:
        """The newest (up to 400) stderr lines: host logs only, never a diagnostic."""
        return self._stderr.lines

    @property
    def closed(self) -> bool:
        """True once the connection ended (runtime output ended, or `close()`)."""
        return self._closed_message is not None

    async def wait_outcome(self, seconds: float) -> ProcessOutcome | None:
        """Waits up to `seconds` for the runtime to exit; its facts, or `None` if not observed."""
        process = self._process
        if process is None:
            return None
        with anyio.move_on_after(seconds):
            await process.wait()
        return process.outcome

    # ---- the owned task -------------------------------------------------------------------

    async def _supervise(self) -> None:
        try:
            async with open_managed_process(
                self._argv,
                cwd=self._cwd,
                env=self._env,
                stdin="pipe",
                stdout="pipe",
                stderr="pipe",
                eof_grace_seconds=self._graces[0],
                term_grace_seconds=self._graces[1],
                kill_grace_seconds=self._graces[2],
            ) as process:
                assert process.stdin is not None
                assert process.stdout is not None
                assert process.stderr is not None
                self._process = process
                self._writer = FrameWriter(process.stdin)
                async with anyio.create_task_group() as task_group:
                    self._task_group = task_group
                    task_group.start_soon(self._stderr.drain, process.stderr)
                    task_group.start_soon(self._read, process, process.stdout)
                    self._ready.set()
                    await self._stop.wait()
                    task_group.cancel_scope.cancel()
        except Exception as error:
            if self._ready.is_set():
                raise
            self._spawn_error = error
        finally:
            self._task_group = None
            self._fail_transport("the SDK runtime connection closed")
            self._ready.set()

    async def _read(self, process: ManagedProcess, stdout: anyio.abc.ByteReceiveStream) -> None:
        reader = FrameReader(stdout, max_frame_bytes=self._max_frame_bytes)
        try:
            while True:
                self._dispatch(await reader.receive())
        except FrameTooLargeError:
            limit = self._max_frame_bytes
            self._fail_transport(f"the SDK runtime sent a line over the {limit}-byte frame limit")
            # The stream is no longer trusted, but keep it flowing so the runtime never blocks.
            await _discard(stdout)
            return
        except anyio.EndOfStream:
            reason = "the SDK runtime closed its output"
        except OSError:
            reason = "reading the SDK runtime's output failed"
        # Wait briefly for the exit facts and the last stderr lines, for the host-log message.
        with anyio.move_on_after(OUTCOME_WAIT_SECONDS):
            await process.wait()
            await self._stderr.ended.wait()
        self._fail_transport(self._closed_text(reason, process.outcome))

    def _closed_text(self, reason: str, outcome: ProcessOutcome | None) -> str:
        facts = reason
        if outcome is not None and outcome.exit_code is not None:
            facts += f" (exit code {outcome.exit_code})"
        elif outcome is not None and outcome.signal is not None:
            facts += f" (signal {outcome.signal})"
        lines = self._stderr.lines
        if lines:
            facts += "; last stderr lines:\n" + "\n".join(lines)
        return facts

    def _dispatch(self, frame: Request | Response | Notification) -> None:
        if isinstance(frame, Response):
            slot = self._pending.get(frame.id) if isinstance(frame.id, str) else None
            if slot is None:
                _log.debug("ignoring a response with an unknown id")
            else:
                slot.resolve(frame)
        elif isinstance(frame, Notification):
            self._tree.observe(frame)
            for subscription in list(self._subscriptions):
                subscription._offer(frame)  # pyright: ignore[reportPrivateUsage]
        elif self._task_group is not None:
            # The client serves no methods: the transport-level "no handler" answer.
            self._task_group.start_soon(self._refuse, frame)

    async def _refuse(self, request: Request) -> None:
        if self._writer is None:
            return
        try:
            await self._writer.send_error(request.id, METHOD_NOT_FOUND, "Method not found")
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    def _fail_transport(self, message: str) -> None:
        if self._closed_message is not None:
            return
        self._closed_message = message
        for slot in list(self._pending.values()):
            slot.fail(message)
        for subscription in list(self._subscriptions):
            subscription._die(message)  # pyright: ignore[reportPrivateUsage]

    # ---- requests -------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: JSONObject | None = None,
        *,
        timeout_seconds: float | None = None,
    ) -> JSONValue:
        """Sends a request and waits for its result (`params` default to `{}`).

        Raises:
            JSONRPCError: the runtime answered with an error.
            TransportClosedError: the runtime is not running, or its output ended first.
            RequestTimeoutError: `timeout_seconds` elapsed; the request is forgotten.
        """
        writer = self._writer
        if self._closed_message is not None:
            raise TransportClosedError(self._closed_message)
        if writer is None:
            raise TransportClosedError("the SDK runtime is not running")
        request_id = new_request_id()
        slot = _Pending()
        self._pending[request_id] = slot
        try:
            limit = math.inf if timeout_seconds is None else timeout_seconds
            with anyio.move_on_after(limit) as scope:
                try:
                    await writer.send_request(request_id, method, params or {})
                except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as error:
                    raise TransportClosedError("writing to the SDK runtime failed") from error
                await slot.done.wait()
            if scope.cancelled_caught and not slot.done.is_set():
                raise RequestTimeoutError(f"{method} got no response in {timeout_seconds} s")
        finally:
            self._pending.pop(request_id, None)
        if slot.error is not None:
            raise slot.error
        return slot.result

    async def initialize(
        self,
        *,
        cwd: str,
        provider: str,
        model: str,
        max_tokens: int | None = None,
        timeout_seconds: float | None = None,
    ) -> InitializeResult:
        """The handshake: `initialize {cwd, provider, model, maxTokens?}`.

        Raises:
            SDKProtocolError: the result has no string `serverInfo.name` / `.version`.
            JSONRPCError, TransportClosedError, RequestTimeoutError: as `request`.
        """
        params = InitializeParams(cwd=cwd, provider=provider, model=model, max_tokens=max_tokens)
        result = await self.request(INITIALIZE, params.to_params(), timeout_seconds=timeout_seconds)
        return InitializeResult.parse(result)

    async def prompt(
        self, session_id: str, text: str, *, timeout_seconds: float | None = None
    ) -> PromptResult:
        """Enqueues a text prompt; returns the receipt id (the turn runs afterwards).

        Raises:
            SDKProtocolError: the result has no string `messageId`.
            JSONRPCError, TransportClosedError, RequestTimeoutError: as `request`.
        """
        params = PromptParams(session_id=session_id, text=text).to_params()
        result = await self.request(SESSION_PROMPT, params, timeout_seconds=timeout_seconds)
        return PromptResult.parse(result)

    async def shutdown(self, *, timeout_seconds: float | None = None) -> None:
        """Asks the runtime to flush, dispose and exit 0 (`close()` does this for you)."""
        await self.request(SHUTDOWN, {}, timeout_seconds=timeout_seconds)

    # ---- notifications --------------------------------------------------------------------

    def subscribe(
        self,
        *,
        session_id: str | None = None,
        filter: NotificationFilter | None = None,
    ) -> Subscription:
        """A new queue of notifications from now on.

        `session_id` scopes it to that session's tree (children announced by
        `subagent.started`); `filter` chooses further. A subscription made after the runtime's
        output ended fails at once with `TransportClosedError`.
        """
        subscription = Subscription(
            self._tree,
            session_id=session_id,
            filter=filter,
            on_close=self._unsubscribe,
            closed_message=self._closed_message,
        )
        if self._closed_message is None:
            self._subscriptions.append(subscription)
        return subscription

    def _unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)

    async def run_prompt(
        self,
        session_id: str,
        text: str,
        *,
        transcript: RunTranscript | None = None,
    ) -> RunTranscript:
        """The owned-run helper: subscribe → prompt → receipt → collect → root idle.

        Pass your own `transcript` to keep the partial output when this raises.

        Raises:
            SDKProtocolError: a malformed receipt, root event, message or status.
            JSONRPCError, TransportClosedError: as `request` / `Subscription.receive`.
        """
        run = transcript if transcript is not None else RunTranscript(session_id)
        with self.subscribe(session_id=session_id) as subscription:
            receipt = await self.prompt(session_id, text)
            run.message_id = receipt.message_id
            while not run.finished:
                run.feed(await subscription.receive())
        return run


async def _discard(stream: anyio.abc.ByteReceiveStream) -> None:
    """Keeps a pipe flowing after the stream stopped being trusted, so the writer never blocks."""
    while True:
        try:
            await stream.receive(65536)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return
