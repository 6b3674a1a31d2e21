"""The retry rule of model requests, over real loopback HTTP against the scripted server."""

from __future__ import annotations

import errno
import socket

import anyio
import httpx
import pytest
from model_agent import (
    ModelClient,
    ModelEndpoint,
    ModelRequestError,
    PhaseTimeouts,
    ReasoningDelta,
    Retrying,
    TextDelta,
)
from model_agent import _model_client as model_client_module
from model_agent._transport import _classify
from model_agent.testing import open_scripted_model_server
from subagent_core import CancelSignal

MESSAGES = [{"role": "user", "content": "retry-case"}]
SCHEDULE = [0.5, 1.0, 2.0]


def endpoint(base_url: str, **options: object) -> ModelEndpoint:
    timeouts = options.pop("timeouts", PhaseTimeouts())
    return ModelEndpoint(base_url=base_url, api_key="k", model="m", timeouts=timeouts, **options)  # type: ignore[arg-type]


def script(*replies: dict[str, object]) -> dict[str, object]:
    return {"rules": [{"match": "retry-case", "replies": list(replies)}]}


async def complete(server_url: str, sleep: object, **options: object):  # type: ignore[no-untyped-def]
    events: list[object] = []
    async with ModelClient(endpoint(server_url, **options)) as client:
        try:
            reply = await client.complete(MESSAGES, observer=events.append)
        except ModelRequestError as error:
            return error, events
    return reply, events


TRANSIENT = [
    pytest.param({"drop": "before-response"}, {}, "stream-cut", id="drop-before-response"),
    pytest.param({"drop": "after-headers"}, {}, "stream-cut", id="drop-after-headers"),
    pytest.param({"drop": "after-text"}, {}, "stream-cut", id="drop-after-role-chunk"),
    pytest.param(
        {"drop": "before-response", "reset": True},
        {},
        "connection-reset",
        id="reset-before-response",
    ),
    pytest.param(
        {"drop": "after-headers", "reset": True}, {}, "connection-reset", id="reset-after-headers"
    ),
    pytest.param({"status": 408}, {}, "http-408", id="http-408"),
    pytest.param({"done": False, "finish_reason": ""}, {}, "stream-cut", id="no-done-no-finish"),
    pytest.param(
        {"hang": "before-response"},
        {"timeouts": PhaseTimeouts(first_byte_seconds=1.0)},
        "first-byte-timeout",
        id="first-byte-timeout",
    ),
    pytest.param(
        {"hang": "after-text"},
        {"timeouts": PhaseTimeouts(idle_seconds=0.2)},
        "idle-timeout",
        id="idle-timeout",
    ),
    pytest.param(
        {"keepalives": 1000, "delay_ms": 20},
        {"timeouts": PhaseTimeouts(total_seconds=1.0)},
        "total-timeout",
        id="total-timeout",
    ),
]


@pytest.mark.parametrize(("reply", "options", "reason"), TRANSIENT)
async def test_a_transient_failure_is_retried_three_times_on_schedule_then_fails(
    reply: dict[str, object], options: dict[str, object], reason: str, sleep
) -> None:
    """0.5 s, 1 s, 2 s (injected clock), a fresh request each time, then failed."""
    with anyio.fail_after(30):
        async with open_scripted_model_server(script(reply)) as server:
            error, events = await complete(server.base_url, sleep, **options)
            assert server.request_count == 4
    assert isinstance(error, ModelRequestError)
    assert error.kind == "failed"
    assert str(error) == f"model request failed after 3 retries ({reason})"
    assert sleep.delays == SCHEDULE
    assert events == [
        Retrying(attempt=1, delay_seconds=0.5, reason=reason),
        Retrying(attempt=2, delay_seconds=1.0, reason=reason),
        Retrying(attempt=3, delay_seconds=2.0, reason=reason),
    ]


async def test_a_refused_connection_is_retried_on_schedule(sleep) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with anyio.fail_after(30):
        error, events = await complete(f"http://127.0.0.1:{port}/v1", sleep)
    assert isinstance(error, ModelRequestError)
    assert str(error) == "model request failed after 3 retries (connection-refused)"
    assert sleep.delays == SCHEDULE
    assert [event.reason for event in events] == ["connection-refused"] * 3  # type: ignore[attr-defined]


async def test_a_transient_failure_then_success_completes(sleep) -> None:
    with anyio.fail_after(30):
        async with open_scripted_model_server(
            script({"drop": "before-response", "times": 2}, {"text": "fine", "chunks": 2})
        ) as server:
            reply, events = await complete(server.base_url, sleep)
            assert server.request_count == 3
    assert reply.content == "fine"
    assert sleep.delays == [0.5, 1.0]
    assert events[-2:] == [TextDelta("fi"), TextDelta("ne")]


NON_TRANSIENT = [
    pytest.param({"status": 400}, "http-400", id="http-400"),
    pytest.param({"status": 401}, "http-401", id="http-401"),
    pytest.param({"status": 429}, "http-429", id="http-429"),
    pytest.param({"status": 500}, "http-500", id="http-500"),
    pytest.param({"status": 503}, "http-503", id="http-503"),
    pytest.param({"malformed": True}, "malformed-stream", id="malformed-json"),
    pytest.param({"error": {"message": "boom", "code": "x"}}, "in-band-error", id="in-band-error"),
]


@pytest.mark.parametrize(("reply", "reason"), NON_TRANSIENT)
async def test_a_non_transient_failure_fails_at_once(
    reply: dict[str, object], reason: str, sleep
) -> None:
    with anyio.fail_after(30):
        async with open_scripted_model_server(script(reply, {"text": "never"})) as server:
            error, events = await complete(server.base_url, sleep)
            assert server.request_count == 1
    assert isinstance(error, ModelRequestError)
    assert (error.kind, error.reason, error.retries) == ("failed", reason, 0)
    assert str(error) == f"model request failed ({reason})"
    assert sleep.delays == []
    assert events == []


async def test_a_json_document_instead_of_a_stream_fails_at_once(sleep) -> None:
    """A server ignoring `stream: true` answers 200 with JSON; retrying would not help."""
    with anyio.fail_after(30):
        async with open_scripted_model_server(
            script({"status": 200, "body": {"choices": []}})
        ) as server:
            error, events = await complete(server.base_url, sleep)
            assert server.request_count == 1
    assert isinstance(error, ModelRequestError)
    assert (error.kind, error.reason) == ("failed", "not-a-stream")
    assert events == []


async def test_a_status_is_retried_only_when_the_operator_opted_in(sleep) -> None:
    with anyio.fail_after(30):
        async with open_scripted_model_server(
            script({"status": 503, "times": 2}, {"text": "recovered"})
        ) as server:
            reply, events = await complete(server.base_url, sleep, retry_statuses=frozenset({503}))
            assert server.request_count == 3
    assert reply.content == "recovered"
    assert sleep.delays == [0.5, 1.0]
    assert [event for event in events if isinstance(event, Retrying)] == [
        Retrying(attempt=1, delay_seconds=0.5, reason="http-503"),
        Retrying(attempt=2, delay_seconds=1.0, reason="http-503"),
    ]


async def test_an_in_band_error_after_text_keeps_the_partial_text(sleep) -> None:
    with anyio.fail_after(30):
        async with open_scripted_model_server(
            script({"text": "partial", "error": {"message": "overloaded"}})
        ) as server:
            error, _ = await complete(server.base_url, sleep)
            assert server.request_count == 1
    assert isinstance(error, ModelRequestError)
    assert (error.kind, error.reason, error.content) == (
        "failed_with_partial_output",
        "in-band-error",
        "partial",
    )
    assert "overloaded" not in str(error)


async def test_a_drop_after_the_first_text_delta_is_not_retried_and_keeps_the_text(sleep) -> None:
    with anyio.fail_after(30):
        async with open_scripted_model_server(
            script({"text": "Hello wor", "chunks": 3, "drop": "after-text"}, {"text": "again"})
        ) as server:
            error, events = await complete(server.base_url, sleep)
            assert server.request_count == 1
    assert isinstance(error, ModelRequestError)
    assert error.kind == "failed_with_partial_output"
    assert error.content == "Hello wor"
    assert str(error) == "model request failed after partial output (stream-cut)"
    assert events == [TextDelta("Hel"), TextDelta("lo "), TextDelta("wor")]
    assert sleep.delays == []


async def test_a_drop_after_only_reasoning_is_not_retried(sleep) -> None:
    with anyio.fail_after(30):
        async with open_scripted_model_server(
            script({"reasoning": "thinking", "drop": "after-text"}, {"text": "again"})
        ) as server:
            error, events = await complete(server.base_url, sleep)
            assert server.request_count == 1
    assert isinstance(error, ModelRequestError)
    assert (error.kind, error.content, error.reasoning) == (
        "failed_with_partial_output",
        "",
        "thinking",
    )
    assert events == [ReasoningDelta("thinking")]


async def test_cancel_during_the_backoff_wait_wins_and_no_request_follows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cancel = CancelSignal()
    waits: list[float] = []

    async def cancelling_sleep(delay: float) -> None:
        waits.append(delay)
        cancel.cancel()
        await anyio.sleep_forever()

    monkeypatch.setattr(model_client_module, "_backoff", cancelling_sleep)
    with anyio.fail_after(30):
        async with open_scripted_model_server(script({"status": 408}, {"text": "x"})) as server:
            async with ModelClient(endpoint(server.base_url)) as client:
                with pytest.raises(ModelRequestError) as caught:
                    await client.complete(MESSAGES, cancel=cancel)
            assert server.request_count == 1
    assert caught.value.kind == "cancelled"
    assert str(caught.value) == "model request was cancelled"
    assert waits == [0.5]


async def test_cancel_during_a_hanging_request_ends_it(sleep) -> None:
    cancel = CancelSignal()
    with anyio.fail_after(30):
        async with open_scripted_model_server(script({"hang": "after-headers"})) as server:

            async def cancel_when_arrived() -> None:
                await server.wait_for_requests(1)
                cancel.cancel()

            async with (
                ModelClient(endpoint(server.base_url)) as client,
                anyio.create_task_group() as group,
            ):
                group.start_soon(cancel_when_arrived)
                with pytest.raises(ModelRequestError) as caught:
                    await client.complete(MESSAGES, cancel=cancel)
            assert server.request_count == 1
    assert caught.value.kind == "cancelled"


def _chained(top: httpx.HTTPError, cause: BaseException) -> httpx.HTTPError:
    top.__cause__ = cause
    return top


@pytest.mark.parametrize(
    ("error", "reason", "transient"),
    [
        (
            _chained(httpx.ConnectError("x"), ConnectionRefusedError(errno.ECONNREFUSED, "x")),
            "connection-refused",
            True,
        ),
        (
            _chained(httpx.ReadError("x"), ConnectionResetError(errno.ECONNRESET, "x")),
            "connection-reset",
            True,
        ),
        (
            _chained(httpx.ConnectError("x"), ConnectionAbortedError(errno.ECONNABORTED, "x")),
            "connection-aborted",
            True,
        ),
        (
            _chained(httpx.ConnectError("x"), OSError(errno.ENETUNREACH, "x")),
            "network-unreachable",
            True,
        ),
        (
            _chained(httpx.ConnectError("x"), OSError(errno.EHOSTUNREACH, "x")),
            "network-unreachable",
            True,
        ),
        (_chained(httpx.WriteError("x"), BrokenPipeError(errno.EPIPE, "x")), "broken-pipe", True),
        (
            _chained(httpx.ConnectError("x"), socket.gaierror(socket.EAI_AGAIN, "x")),
            "dns-temporary",
            True,
        ),
        (
            _chained(httpx.ConnectError("x"), socket.gaierror(socket.EAI_NONAME, "x")),
            "dns-error",
            False,
        ),
        (httpx.ConnectTimeout("x"), "connect-timeout", True),
        (httpx.ReadTimeout("x"), "timeout", True),
        (httpx.RemoteProtocolError("x"), "stream-cut", True),
        (httpx.ConnectError("tls"), "connect-error", False),
    ],
)
def test_exception_classification(error: httpx.HTTPError, reason: str, transient: bool) -> None:
    """Each OS-level kind the spec lists maps to a closed reason; only those are transient."""
    failure = _classify(error)
    assert (failure.reason, failure.transient) == (reason, transient)


async def test_a_finished_stream_returns_its_connection_to_the_pool(sleep) -> None:
    """After `[DONE]` the body's end is read, so the next round reuses the connection."""
    with anyio.fail_after(30):
        async with open_scripted_model_server(script({"text": "ok", "chunks": 2})) as server:
            async with ModelClient(endpoint(server.base_url)) as client:
                for _ in range(3):
                    reply = await client.complete(MESSAGES)
                    assert reply.content == "ok"
            assert (server.request_count, server.connection_count) == (3, 1)


async def test_keep_alive_comments_keep_a_slow_stream_alive(sleep) -> None:
    """Comments are liveness: a stream longer than the idle limit, never idle that long, completes."""
    with anyio.fail_after(30):
        async with open_scripted_model_server(
            script({"keepalives": 15, "delay_ms": 100, "text": "late but fine"})
        ) as server:
            reply, events = await complete(
                server.base_url, sleep, timeouts=PhaseTimeouts(idle_seconds=3.0)
            )
            assert server.request_count == 1
    assert reply.content == "late but fine"
    assert events == [TextDelta("late but fine")]
