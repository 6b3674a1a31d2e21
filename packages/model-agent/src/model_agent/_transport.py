"""All HTTP code of the package: one streaming chat-completions attempt over httpx.

httpx is imported lazily (the CLI start-up path imports this package) and its exceptions are
mapped to `AttemptFailure` here, in one place, so a switch to a successor library stays a
one-file change. A failure carries a closed `reason` and whether it is transient; the text of
the server's error body or exception messages never leaves this module.
"""

from __future__ import annotations

import errno
import functools
import json
import socket
import ssl
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import anyio
from subagent_core.kit import traceparent

from ._config import ModelEndpoint
from ._sse import EventTooLargeError, SSEDecoder, SSEFormatError

if TYPE_CHECKING:
    import httpx

_TRANSIENT_ERRNO: dict[int, str] = {
    errno.ECONNREFUSED: "connection-refused",
    errno.ECONNRESET: "connection-reset",
    errno.ECONNABORTED: "connection-aborted",
    errno.ENETUNREACH: "network-unreachable",
    errno.EHOSTUNREACH: "network-unreachable",
    errno.EPIPE: "broken-pipe",
}

_TRANSIENT_TYPES: tuple[tuple[type[OSError], str], ...] = (
    # By type first: on Windows the errno values are the WSA codes.
    (ConnectionRefusedError, "connection-refused"),
    (ConnectionResetError, "connection-reset"),
    (ConnectionAbortedError, "connection-aborted"),
    (BrokenPipeError, "broken-pipe"),
)

_DRAIN_SECONDS = 0.5
"""How long to wait for the end of a body after `[DONE]` before dropping the connection."""

_ERROR_BODY_LIMIT = 64 * 1024
"""Bytes of a non-200 body read (and discarded) so the connection can be reused."""


class AttemptFailure(Exception):
    """One attempt failed; `reason` is a closed value, `transient` says whether to retry."""

    def __init__(self, reason: str, *, transient: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


ChunkHandler = Callable[[Mapping[str, Any]], None]


@functools.cache
def _tls_context(trust_env: bool) -> ssl.SSLContext:
    """One verified TLS context per process, shared by every agent's client.

    Building one loads the CA bundle (about 100 ms on the event-loop thread); a context per
    agent made 30 parents start one after another.
    """
    import httpx

    return httpx.create_ssl_context(trust_env=trust_env)


class HTTPTransport:
    """A pooled httpx client for one endpoint; `attempt` makes one fresh streaming request."""

    def __init__(self, endpoint: ModelEndpoint) -> None:
        self._endpoint = endpoint
        self._client: httpx.AsyncClient | None = None

    def _ensure_client(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            timeouts = self._endpoint.timeouts
            trust_env = not _is_loopback(self._endpoint.base_url)
            # Read/write/pool are bounded by our own phase scopes; connect is httpx's.
            self._client = httpx.AsyncClient(
                verify=_tls_context(trust_env),
                timeout=httpx.Timeout(
                    connect=timeouts.connect_seconds,
                    read=None,
                    write=timeouts.first_byte_seconds,
                    pool=timeouts.connect_seconds,
                ),
                # Proxy settings apply to real endpoints, never to a loopback test server.
                trust_env=trust_env,
            )
        return self._client

    async def aclose(self) -> None:
        """Closes pooled connections."""
        if self._client is not None:
            client, self._client = self._client, None
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await client.aclose()

    async def attempt(self, body: Mapping[str, Any], on_chunk: ChunkHandler) -> bool:
        """Streams one request; True when it reached `[DONE]`, False when the body just ended.

        `on_chunk` gets each parsed chunk; it may raise `AttemptFailure` to stop. Whether an
        ended body is complete (a `finish_reason` came) is the caller's call.

        Raises:
            AttemptFailure: anything that ended the attempt early, classified.
        """
        import httpx

        total = self._endpoint.timeouts.total_seconds
        done = False
        try:
            with anyio.move_on_after(total) as total_scope:
                done = await self._stream(body, on_chunk)
        except httpx.HTTPError as error:
            raise _classify(error) from None
        if total_scope.cancelled_caught:
            raise AttemptFailure("total-timeout", transient=True)
        return done

    async def _stream(self, body: Mapping[str, Any], on_chunk: ChunkHandler) -> bool:
        endpoint = self._endpoint
        timeouts = endpoint.timeouts
        client = self._ensure_client()
        headers = {"Accept": "text/event-stream"}
        if endpoint.api_key:
            headers["Authorization"] = f"Bearer {endpoint.api_key}"
        context = traceparent()
        if context is not None:
            # The run's span (current in its task): a traced endpoint joins the caller's trace.
            headers["traceparent"] = context
        request = client.build_request(
            "POST",
            endpoint.base_url.rstrip("/") + "/chat/completions",
            content=json.dumps(body, ensure_ascii=False).encode("utf-8"),
            headers={**headers, "Content-Type": "application/json"},
        )
        first_deadline = anyio.current_time() + timeouts.first_byte_seconds
        response: httpx.Response | None = None
        try:
            with anyio.CancelScope(deadline=first_deadline) as scope:
                response = await client.send(request, stream=True)
            if scope.cancelled_caught or response is None:
                raise AttemptFailure("first-byte-timeout", transient=True)
            status = response.status_code
            if status != 200:
                await _discard_body(response)
                transient = status == 408 or status in endpoint.retry_statuses
                raise AttemptFailure(f"http-{status}", transient=transient)
            if response.headers.get("content-type", "").startswith("application/json"):
                # A whole JSON document instead of a stream: not something a retry fixes.
                await _discard_body(response)
                raise AttemptFailure("not-a-stream", transient=False)
            decoder = SSEDecoder(max_event_bytes=endpoint.max_event_bytes)
            return await _read_events(
                response, decoder, on_chunk, first_deadline, timeouts.idle_seconds
            )
        finally:
            if response is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                    await response.aclose()


async def _read_events(
    response: httpx.Response,
    decoder: SSEDecoder,
    on_chunk: ChunkHandler,
    first_deadline: float,
    idle: float,
) -> bool:
    """Feeds every event to `on_chunk`; True at `[DONE]`, False when the body just ended."""
    chunks = cast(AsyncGenerator[bytes], response.aiter_bytes())
    first = True
    try:
        while True:
            deadline = first_deadline if first else anyio.current_time() + idle
            chunk: bytes | None = None
            with anyio.CancelScope(deadline=deadline) as scope:
                chunk = await anext(chunks, None)
            if scope.cancelled_caught:
                reason = "first-byte-timeout" if first else "idle-timeout"
                raise AttemptFailure(reason, transient=True)
            if chunk is None:
                break
            if not chunk:
                continue
            first = False
            try:
                payloads = decoder.feed(chunk)
            except EventTooLargeError:
                raise AttemptFailure("event-too-large", transient=False) from None
            except SSEFormatError:
                raise AttemptFailure("malformed-stream", transient=False) from None
            for payload in payloads:
                if _handle(payload, on_chunk):
                    await _drain(chunks)
                    return True
        for payload in decoder.flush():
            if _handle(payload, on_chunk):
                return True
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(2):
            await chunks.aclose()
    return False


def _handle(payload: str, on_chunk: ChunkHandler) -> bool:
    """Parses one payload; True at `[DONE]`."""
    if payload.strip() == "[DONE]":
        return True
    try:
        chunk = json.loads(payload)
    except ValueError:
        raise AttemptFailure("malformed-stream", transient=False) from None
    if not isinstance(chunk, dict):
        raise AttemptFailure("malformed-stream", transient=False)
    chunk = cast(dict[str, Any], chunk)
    if "error" in chunk and chunk["error"] is not None:
        raise AttemptFailure("in-band-error", transient=False)
    on_chunk(chunk)
    return False


async def _drain(chunks: AsyncGenerator[bytes]) -> None:
    """Reads the little left after `[DONE]` (the chunked terminator) so the connection can go
    back to the pool; bounded in time and bytes, anything more is dropped with the connection."""
    received = 0
    with anyio.move_on_after(_DRAIN_SECONDS):
        async for rest in chunks:
            received += len(rest)
            if received > _ERROR_BODY_LIMIT:
                break


async def _discard_body(response: httpx.Response) -> None:
    received = 0
    with anyio.move_on_after(2):
        async for part in response.aiter_raw():
            received += len(part)
            if received > _ERROR_BODY_LIMIT:
                break


def _is_loopback(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def _classify(error: httpx.HTTPError) -> AttemptFailure:
    """Maps an httpx exception to a closed reason (its message is never kept)."""
    import httpx

    if isinstance(error, httpx.ConnectTimeout | httpx.PoolTimeout):
        return AttemptFailure("connect-timeout", transient=True)
    if isinstance(error, httpx.TimeoutException):
        return AttemptFailure("timeout", transient=True)
    if isinstance(error, httpx.RemoteProtocolError):
        return AttemptFailure("stream-cut", transient=True)
    cause = _os_cause(error)
    if isinstance(cause, socket.gaierror):
        if cause.errno == socket.EAI_AGAIN:
            return AttemptFailure("dns-temporary", transient=True)
        return AttemptFailure("dns-error", transient=False)
    if cause is not None:
        for kind, reason in _TRANSIENT_TYPES:
            if isinstance(cause, kind):
                return AttemptFailure(reason, transient=True)
        if cause.errno in _TRANSIENT_ERRNO:
            return AttemptFailure(_TRANSIENT_ERRNO[cause.errno], transient=True)
    if isinstance(error, httpx.ReadError):
        return AttemptFailure("connection-reset", transient=True)
    if isinstance(error, httpx.WriteError):
        return AttemptFailure("broken-pipe", transient=True)
    if isinstance(error, httpx.ConnectError):
        return AttemptFailure("connect-error", transient=False)
    return AttemptFailure("transport-error", transient=False)


def _os_cause(error: BaseException) -> OSError | None:
    """The first OSError carrying an errno in the exception's cause/context chain."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno is not None:
            return current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(cast(BaseExceptionGroup[BaseException], current).exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)
    return None
