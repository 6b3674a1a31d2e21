"""`SDKConnection`: one JSON-RPC connection over an SDK runtime's stdio, on a process it is given.

It resolves responses (in any order; the first answer to an id wins, unknown ids and duplicates
are dropped), fans notifications out to subscriptions, writes every frame through one path whose
writes are bounded in time, refuses the runtime's requests, and drains stderr into a tail for
host logs. When the runtime's output ends, or its leader exits while a descendant still holds
the output open, every pending request fails with `TransportClosedError`; queued notifications
stay readable.

It never spawns or ends a process, so two owners stand on it: `SDKClient` spawns its own
runtime (the public client), and the provider's protocol (`_run.SDKChild`) speaks over the
process the lifecycle kit spawned, whose deadlines and teardown are then the kit's.

Nothing a runtime sends makes it allocate per message beyond fixed bounds: requests to the
client are refused by one task from a queue of at most `MAX_QUEUED_ANSWERS` answers (more are
dropped, counted in the host log), subscriptions have bounded queues, and a write blocked for
`write_timeout_seconds` (a runtime that stopped reading) ends the connection.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Final

import anyio
import anyio.abc
import anyio.lowlevel
from subagent_core.kit import (
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_WRITE_TIMEOUT_SECONDS,
    FrameTooLargeError,
    LineReader,
    ManagedProcess,
    ProcessOutcome,
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

MAX_QUEUED_ANSWERS: Final = 8
"""Refusals of runtime→client requests waiting to be written; a request beyond is dropped."""

_MAX_ANSWERED_ID_CHARS: Final = 1024
"""A request id longer than this is not echoed back (its answer would cost its own size)."""

_YIELD_BYTES: Final = 1024 * 1024
"""The reader yields to other tasks at least once per this many bytes of frames."""


class SDKConnection:
    """The SDK wire over one runtime process's stdio: requests, subscriptions, the goodbye.

    `attach(process)` binds it to a spawned runtime and `serve()` (in a task of the owner's)
    reads until cancelled. `on_line` is called on every line the runtime writes (one clock
    reading: an idle deadline's touch). All errors raised are `SDKError` subclasses.
    """

    def __init__(
        self,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        write_timeout_seconds: float = DEFAULT_WRITE_TIMEOUT_SECONDS,
        on_line: Callable[[], None] | None = None,
    ) -> None:
        self._max_frame_bytes = max_frame_bytes
        self._write_timeout_seconds = write_timeout_seconds
        self.on_line = on_line
        """Called on every line the runtime writes."""
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

    # ---- the process it speaks to ---------------------------------------------------------

    def attach(self, process: ManagedProcess) -> None:
        """Binds the connection to `process` (stdin and stdout piped): requests may go out
        from now on, and `serve()` reads."""
        self._process = process
        self._stdin = process.stdin

    async def serve(self) -> None:
        """Reads the runtime's output and stderr, watches its exit and writes refusals.

        Runs until the output and stderr ended and the leader exited, or until cancelled; the
        output keeps being drained after the connection failed, so the runtime never blocks.
        """
        process = self._process
        assert process is not None
        assert process.stdout is not None
        async with anyio.create_task_group() as task_group:
            if process.stderr is not None:
                task_group.start_soon(self._stderr.drain, process.stderr)
            else:
                self._stderr.ended.set()
            task_group.start_soon(self._read, process, process.stdout)
            task_group.start_soon(self._watch_exit, process)
            task_group.start_soon(self._answer_requests)

    @property
    def stderr_lines(self) -> list[str]:
        """The newest (up to 400) stderr lines: host logs only, never a diagnostic."""
        return self._stderr.lines

    @property
    def closed(self) -> bool:
        """True once the connection ended (runtime output ended, leader exited, or closed)."""
        return self._closed_message is not None

    async def wait_closed(self) -> None:
        """Waits until the connection ended."""
        await self._closed.wait()

    # ---- reading --------------------------------------------------------------------------

    async def _read(self, process: ManagedProcess, stdout: anyio.abc.ByteReceiveStream) -> None:
        reader = LineReader(stdout, max_frame_bytes=self._max_frame_bytes)
        unyielded = 0
        try:
            while self._closed_message is None:
                line = await reader.receive_line()
                on_line = self.on_line
                if on_line is not None:
                    on_line()
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

    # ---- writing --------------------------------------------------------------------------

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

    async def goodbye(
        self, timeout_seconds: float, close_stdin: Callable[[], Awaitable[None]]
    ) -> SDKError | None:
        """`shutdown`, bounded by `timeout_seconds`, with stdin EOF right behind its frame.

        A cooperative runtime flushes and exits at once; one deaf to both costs the longer of
        the two waits (the EOF grace runs while the answer is awaited), not their sum. EOF is
        sent whatever happens; no request goes out once the connection ended. Returns the
        request's error, for host logs only.
        """
        if self._closed_message is not None:
            await close_stdin()
            return None
        try:
            await self._call(SHUTDOWN, {}, timeout_seconds, after_send=close_stdin)
        except SDKError as error:
            await close_stdin()  # the frame may never have been written
            return error
        return None

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
