"""`SDKClient`: one runtime process, one JSON-RPC connection, many subscriptions.

The client owns the managed process (stderr piped and drained continuously), a reader that
resolves responses (in any order; the first answer to an id wins, unknown ids and duplicates
are dropped) and fans notifications out to subscriptions, one writer path whose writes are
bounded in time, and the shutdown sequence. When the runtime's output ends, or its leader
exits while a descendant still holds the output open, every pending request fails with
`TransportClosedError`; queued notifications stay readable.

Nothing a runtime sends makes the client allocate per message beyond fixed bounds: requests
to the client are refused by one task from a queue of at most `MAX_QUEUED_ANSWERS` answers
(more are dropped, counted in the host log), subscriptions have bounded queues, and a write
blocked for `write_timeout_seconds` (a runtime that stopped reading) ends the connection.
"""

from __future__ import annotations

import logging
import math
import os
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Final, Self

import anyio
import anyio.abc
import anyio.lowlevel
from subagent_core.kit import (
    DEFAULT_MAX_FRAME_BYTES,
    ChildCommand,
    FrameTooLargeError,
    IdleDeadline,
    LineReader,
    ManagedProcess,
    OwnedTask,
    ProcessOutcome,
    SpawnError,
    open_managed_process,
)

from ._errors import RequestTimeoutError, SDKError, TransportClosedError
from ._framing import (
    Notification,
    Request,
    Response,
    encode_frame,
    error_frame,
    new_request_id,
    parse_frame,
    request_frame,
)
from ._json import JSONObject, JSONValue
from ._pending import DropCounter, PendingReply
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
"""How long a closed connection waits for the runtime's exit facts before classifying."""

DEFAULT_WRITE_TIMEOUT_SECONDS: Final = 10.0
"""A write blocked this long means the runtime stopped reading its stdin: the connection ends."""

MAX_QUEUED_ANSWERS: Final = 8
"""Refusals of runtime→client requests waiting to be written; a request beyond is dropped."""

_MAX_ANSWERED_ID_CHARS: Final = 1024
"""A request id longer than this is not echoed back (its answer would cost its own size)."""

_YIELD_BYTES: Final = 1024 * 1024
"""The reader yields to other tasks at least once per this many bytes of frames."""


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
        write_timeout_seconds: float = DEFAULT_WRITE_TIMEOUT_SECONDS,
        shutdown_timeout_seconds: float = 0.5,
        eof_grace_seconds: float = 0.5,
        term_grace_seconds: float = 0.5,
        kill_grace_seconds: float = 3.0,
        placed: ChildCommand | None = None,
    ) -> None:
        self._argv = [command, *args]
        # A command with a placement (`remote`) is opened by it, with its own env and cwd.
        self._placed = placed
        self._cwd = None if cwd is None else os.fspath(cwd)
        self._env = None if env is None else dict(env)
        self._max_frame_bytes = max_frame_bytes
        self._write_timeout_seconds = write_timeout_seconds
        self._shutdown_timeout_seconds = shutdown_timeout_seconds
        self._graces = (eof_grace_seconds, term_grace_seconds, kill_grace_seconds)
        self._supervisor: OwnedTask | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._spawn_error: Exception | None = None
        self._process: ManagedProcess | None = None
        self._stdin: anyio.abc.ByteSendStream | None = None
        self._write_lock = anyio.Lock()
        self._pending: dict[str, PendingReply] = {}
        self._answers: deque[bytes] = deque()
        self._answers_waiting = anyio.Event()
        self._drops = DropCounter()
        self._closed_message: str | None = None
        self._closed = anyio.Event()
        self._reader_ended = anyio.Event()
        self._stderr = StderrTail()
        self._tree = SessionTree()
        self._subscriptions: list[Subscription] = []
        self._close_lock = anyio.Lock()
        self._close_result: bool | None = None
        self.idle: IdleDeadline | None = None
        """Touched on every line the runtime writes (a provider sets it when it publishes a
        run; one clock reading per line)."""

    # ---- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Spawns the runtime and starts reading its output.

        Raises:
            TransportClosedError: the process could not be spawned (the `SpawnError` reason is
                in the message and the error is the `__cause__`).
        """
        if self._supervisor is not None:
            raise RuntimeError("SDKClient.start() was already called")
        self._supervisor = OwnedTask.start(self._supervise, name="subagent-sdk client")
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
        `shutdown_timeout_seconds` with stdin EOF right behind it, then the managed ladder
        (the rest of the EOF grace → SIGTERM → SIGKILL). A failed `shutdown` request is only
        logged. Never raises for a cleanup failure.
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
            eof_grace, term_grace, kill_grace = self._graces
            if self._closed_message is None:
                # EOF goes right behind `shutdown`, so the EOF grace runs while the answer is
                # awaited: a runtime deaf to both costs the longer of the two, not their sum.
                eof_sent = anyio.current_time()
                try:
                    await self._call(
                        SHUTDOWN,
                        {},
                        self._shutdown_timeout_seconds,
                        after_send=process.close_stdin,
                    )
                except SDKError as error:
                    shutdown_error = error
                eof_grace = max(0.0, eof_grace - (anyio.current_time() - eof_sent))
            gone = await process.terminate(eof_grace, term_grace, kill_grace)
            if shutdown_error is not None:
                _log.debug(
                    "SDK shutdown request failed (runtime gone: %s): %r", gone, shutdown_error
                )
            if not gone:
                _log.warning("the SDK runtime's process tree is not confirmed gone")
        self._stop.set()
        await self._supervisor.wait()
        self._fail_transport("the SDK client is closed")
        self._drops.summary()
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

    async def wait_closed(self) -> None:
        """Waits until the connection ended (output ended, leader exited, or `close()`)."""
        await self._closed.wait()

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
                self._argv if self._placed is None else self._placed,
                cwd=self._cwd if self._placed is None else None,
                env=self._env if self._placed is None else None,
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
                self._stdin = process.stdin
                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(self._stderr.drain, process.stderr)
                    task_group.start_soon(self._read, process, process.stdout)
                    task_group.start_soon(self._watch_exit, process)
                    task_group.start_soon(self._answer_requests)
                    self._ready.set()
                    await self._stop.wait()
                    task_group.cancel_scope.cancel()
        except Exception as error:
            if self._ready.is_set():
                raise
            self._spawn_error = error
        finally:
            self._fail_transport("the SDK runtime connection closed")
            self._ready.set()

    async def _read(self, process: ManagedProcess, stdout: anyio.abc.ByteReceiveStream) -> None:
        reader = LineReader(stdout, max_frame_bytes=self._max_frame_bytes)
        unyielded = 0
        try:
            while self._closed_message is None:
                line = await reader.receive_line()
                idle = self.idle
                if idle is not None:
                    idle.touch()
                frame = parse_frame(line)
                if frame is not None:
                    self._dispatch(frame, len(line))
                unyielded += len(line)
                if unyielded >= _YIELD_BYTES:
                    # Let subscribers drain what was just queued before reading more, so their
                    # queues stay far below their bounds whenever they are being read.
                    unyielded = 0
                    await anyio.lowlevel.checkpoint()
        except FrameTooLargeError:
            limit = self._max_frame_bytes
            self._fail_transport(f"the SDK runtime sent a line over the {limit}-byte frame limit")
        except anyio.EndOfStream:
            await self._fail_with_facts(process, "the SDK runtime closed its output")
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._fail_with_facts(process, "reading the SDK runtime's output failed")
        finally:
            self._reader_ended.set()
        # The stream is no longer trusted, but keep it flowing so the runtime never blocks.
        await _discard(stdout)

    async def _watch_exit(self, process: ManagedProcess) -> None:
        """Ends the connection when the leader exits, even while a descendant holds stdout."""
        await process.wait()
        # Frames the runtime wrote before exiting are still read; normally its output ends now.
        with anyio.move_on_after(OUTCOME_WAIT_SECONDS):
            await self._reader_ended.wait()
            await self._stderr.ended.wait()
        self._fail_transport(self._closed_text("the SDK runtime exited", process.outcome))

    async def _fail_with_facts(self, process: ManagedProcess, reason: str) -> None:
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

    def _dispatch(self, frame: Request | Response | Notification, size: int) -> None:
        if isinstance(frame, Response):
            # Popped on the first answer: a second answer to the same id finds no slot.
            slot = self._pending.pop(frame.id, None) if isinstance(frame.id, str) else None
            if slot is None:
                self._drops.drop("a response without a waiting request", size)
            else:
                slot.resolve(frame)
        elif isinstance(frame, Notification):
            self._tree.observe(frame)
            for subscription in list(self._subscriptions):
                subscription._offer(frame, size)  # pyright: ignore[reportPrivateUsage]
        else:
            self._refuse(frame, size)

    def _refuse(self, request: Request, size: int) -> None:
        """Queues the transport-level "no handler" answer; the client serves no methods."""
        if isinstance(request.id, str) and len(request.id) > _MAX_ANSWERED_ID_CHARS:
            self._drops.drop("a request with an over-long id", size)
        elif len(self._answers) >= MAX_QUEUED_ANSWERS:
            self._drops.drop("a request beyond the queued answers", size)
        else:
            answer = error_frame(request.id, METHOD_NOT_FOUND, "Method not found")
            self._answers.append(encode_frame(answer))
            self._answers_waiting.set()

    async def _answer_requests(self) -> None:
        """The one task writing refusals, so a flood of requests costs no task per request."""
        while True:
            if not self._answers:
                self._answers_waiting = anyio.Event()
                await self._answers_waiting.wait()
                continue
            try:
                await self._send(self._answers.popleft())
            except TransportClosedError:
                self._answers.clear()
                return

    async def _send(self, data: bytes) -> None:
        """Writes one encoded frame; a write blocked past `write_timeout_seconds` ends the
        connection.

        Raises:
            TransportClosedError: the connection is closed, the write failed, or it blocked
                past the bound.
        """
        stdin = self._stdin
        if self._closed_message is not None:
            raise TransportClosedError(self._closed_message)
        if stdin is None:
            raise TransportClosedError("the SDK runtime is not running")
        with anyio.move_on_after(self._write_timeout_seconds) as scope:
            async with self._write_lock:
                try:
                    await stdin.send(data)
                except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as error:
                    raise TransportClosedError("writing to the SDK runtime failed") from error
        if scope.cancelled_caught:
            seconds = self._write_timeout_seconds
            self._fail_transport(f"a write to the SDK runtime was blocked for {seconds} s")
            raise TransportClosedError(self._closed_message or "")

    def _fail_transport(self, message: str) -> None:
        if self._closed_message is not None:
            return
        self._closed_message = message
        self._closed.set()
        pending, self._pending = self._pending, {}
        for slot in pending.values():
            slot.fail(message)
        for subscription in list(self._subscriptions):
            subscription._die(message)  # pyright: ignore[reportPrivateUsage]
        self._answers_waiting.set()

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
        return await self._call(method, params or {}, timeout_seconds, after_send=None)

    async def _call(
        self,
        method: str,
        params: JSONObject,
        timeout_seconds: float | None,
        *,
        after_send: Callable[[], Awaitable[None]] | None,
    ) -> JSONValue:
        """`request`, with an optional step run right after the frame is written."""
        if self._closed_message is not None:
            raise TransportClosedError(self._closed_message)
        if self._stdin is None:
            raise TransportClosedError("the SDK runtime is not running")
        request_id = new_request_id()
        slot = PendingReply()
        self._pending[request_id] = slot
        try:
            limit = math.inf if timeout_seconds is None else timeout_seconds
            with anyio.move_on_after(limit) as scope:
                await self._send(encode_frame(request_frame(request_id, method, params)))
                if after_send is not None:
                    await after_send()
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
