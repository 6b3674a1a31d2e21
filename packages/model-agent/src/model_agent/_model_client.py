"""The model client: one chat-completions round, streamed, under the bounded retry rule.

Retry rule: only transient failures, only while nothing
(text or reasoning) was shown, at most 3 retries waiting 0.5 s, 1 s, 2 s, each a fresh request
with its own phase timeouts; the wait races the cancel signal and cancel wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import anyio
from subagent_core import CancelSignal

from ._config import ModelEndpoint
from ._events import AgentObserver, ReasoningDelta, Retrying, TextDelta
from ._round import ModelRound, RoundAccumulator, StreamFormatError
from ._transport import AttemptFailure, HTTPTransport

RETRY_DELAYS_SECONDS: tuple[float, ...] = (0.5, 1.0, 2.0)
"""The wait before retry 1, 2 and 3; after the third retry fails, the request fails."""

FailureKind = Literal["failed", "failed_with_partial_output", "cancelled"]


class ModelRequestError(Exception):
    """A model round did not complete. `str(e)` is safe text built from closed values.

    Attributes carry the partial `content` / `reasoning` received (kept, never replayed), the
    closed `reason` of the last failure and how many `retries` were made.
    """

    def __init__(
        self,
        kind: FailureKind,
        *,
        reason: str | None,
        retries: int,
        content: str = "",
        reasoning: str | None = None,
    ) -> None:
        if kind == "cancelled":
            message = "model request was cancelled"
        elif kind == "failed_with_partial_output":
            message = f"model request failed after partial output ({reason})"
        elif retries:
            message = f"model request failed after {retries} retries ({reason})"
        else:
            message = f"model request failed ({reason})"
        super().__init__(message)
        self.kind: FailureKind = kind
        self.reason = reason
        self.retries = retries
        self.content = content
        self.reasoning = reasoning


class ModelClient:
    """Streams chat-completions rounds from one endpoint; reuse it across rounds.

    `async with ModelClient(endpoint) as client: round = await client.complete(messages)`.
    """

    def __init__(self, endpoint: ModelEndpoint) -> None:
        self._endpoint = endpoint
        self._transport = HTTPTransport(endpoint)

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Closes pooled connections; the client may be used again afterwards."""
        await self._transport.aclose()

    def request_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] = (),
        *,
        response_format: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The JSON body of one streaming request (`response_format` sent when given)."""
        body: dict[str, Any] = {
            "model": self._endpoint.model,
            "messages": list(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = list(tools)
        if self._endpoint.max_tokens is not None:
            body["max_tokens"] = self._endpoint.max_tokens
        if response_format is not None:
            body["response_format"] = dict(response_format)
        return body

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        cancel: CancelSignal | None = None,
        observer: AgentObserver | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> ModelRound:
        """One round, retried per the rule; deltas and retries go to `observer` as they happen.

        Raises:
            ModelRequestError: failed, failed with partial output, or cancelled.
        """
        body = self.request_body(messages, tools, response_format=response_format)
        cancel = CancelSignal() if cancel is None else cancel
        retries = 0
        while True:
            if cancel.cancelled:
                raise ModelRequestError("cancelled", reason=None, retries=retries)
            accumulator = RoundAccumulator(max_output_bytes=self._endpoint.max_output_bytes)
            failure = await self._attempt(body, accumulator, cancel, observer)
            if cancel.cancelled:
                raise ModelRequestError(
                    "cancelled",
                    reason=None,
                    retries=retries,
                    content=accumulator.content,
                    reasoning=accumulator.reasoning,
                )
            if failure is None:
                return accumulator.result()
            if accumulator.shown:
                raise ModelRequestError(
                    "failed_with_partial_output",
                    reason=failure.reason,
                    retries=retries,
                    content=accumulator.content,
                    reasoning=accumulator.reasoning,
                )
            if not failure.transient or retries >= len(RETRY_DELAYS_SECONDS):
                raise ModelRequestError("failed", reason=failure.reason, retries=retries)
            delay = RETRY_DELAYS_SECONDS[retries]
            retries += 1
            if observer is not None:
                observer(Retrying(attempt=retries, delay_seconds=delay, reason=failure.reason))
            if not await self._wait(delay, cancel):
                raise ModelRequestError("cancelled", reason=None, retries=retries - 1)

    async def _attempt(
        self,
        body: Mapping[str, Any],
        accumulator: RoundAccumulator,
        cancel: CancelSignal,
        observer: AgentObserver | None,
    ) -> AttemptFailure | None:
        """One request raced against `cancel`; None when the round completed."""

        def on_chunk(chunk: Mapping[str, Any]) -> None:
            try:
                text, reasoning = accumulator.add(chunk)
            except StreamFormatError:
                raise AttemptFailure("malformed-stream", transient=False) from None
            if observer is not None:
                if reasoning:
                    observer(ReasoningDelta(reasoning))
                if text:
                    observer(TextDelta(text))

        failure: AttemptFailure | None = None
        with cancel.cancel_scope():
            try:
                done = await self._transport.attempt(body, on_chunk)
                if not done and accumulator.finish_reason is None:
                    failure = AttemptFailure("stream-cut", transient=True)
            except AttemptFailure as caught:
                failure = caught
        return failure

    async def _wait(self, delay: float, cancel: CancelSignal) -> bool:
        """Waits `delay` unless cancelled first; True when the wait ran out (go on)."""
        with cancel.cancel_scope():
            await _backoff(delay)
        return not cancel.cancelled


async def _backoff(delay: float) -> None:
    """The wait before a retry (one name, so schedule tests can record it instead)."""
    await anyio.sleep(delay)
