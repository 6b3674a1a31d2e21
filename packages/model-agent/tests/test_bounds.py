"""A hostile model server cannot grow the agent's memory: bounded events and answers.

Real HTTP on 127.0.0.1 (the scripted server generates its floods as it sends them, so the
test process's memory is the client's). RSS is sampled with psutil while the request runs;
the assertions are bounds, never times.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from model_agent import (
    Agent,
    AgentConfig,
    AgentEvent,
    ModelClient,
    ModelEndpoint,
    ModelRequestError,
    TextDelta,
)
from model_agent._sse import DEFAULT_MAX_EVENT_BYTES, EventTooLargeError, SSEDecoder
from model_agent.testing import open_scripted_model_server
from subagent_core.kit import OUTPUT_TRUNCATION_MARKER

RSSProbe = Callable[[Callable[[], Awaitable[Any]]], Awaitable[tuple[Any, int]]]

MIB = 1024 * 1024
RSS_BOUND = 64 * MIB
MESSAGES = [{"role": "user", "content": "flood-case"}]


def script(**reply: Any) -> dict[str, Any]:
    return {"rules": [{"match": "flood-case", "replies": [reply]}]}


def endpoint(base_url: str, **options: Any) -> ModelEndpoint:
    return ModelEndpoint(base_url=base_url, api_key="k", model="m", **options)


async def test_a_100_mb_event_of_many_data_lines_fails_the_request_within_the_memory_bound(
    with_peak_rss_growth: RSSProbe,
) -> None:
    async with open_scripted_model_server(script(flood_event_bytes=100 * MIB)) as server:

        async def request() -> ModelRequestError:
            async with ModelClient(endpoint(server.base_url)) as client:
                with pytest.raises(ModelRequestError) as caught:
                    await client.complete(MESSAGES)
            return caught.value

        with anyio.fail_after(50):
            error, growth = await with_peak_rss_growth(request)
        assert server.request_count == 1
    assert (error.kind, error.reason, error.retries) == ("failed", "event-too-large", 0)
    assert str(error) == "model request failed (event-too-large)"
    assert growth <= RSS_BOUND, growth


async def test_a_200_mb_answer_is_cut_at_max_output_bytes_within_the_memory_bound(
    workspace: Path, with_peak_rss_growth: RSSProbe
) -> None:
    events: list[AgentEvent] = []
    async with open_scripted_model_server(
        script(text="head-", flood_text_bytes=200 * MIB, usage={"completion_tokens": 9})
    ) as server:
        config = AgentConfig(endpoint=endpoint(server.base_url), workspace=workspace)
        agent = Agent(config, observer=events.append)
        with anyio.fail_after(50):
            result, growth = await with_peak_rss_growth(lambda: agent.run("flood-case"))
    kept = 8 * MIB
    assert result.status == "completed"
    assert len(result.output) == kept + len(OUTPUT_TRUNCATION_MARKER)
    assert result.output.startswith("head-xxx")
    assert result.output.endswith("x" + OUTPUT_TRUNCATION_MARKER)
    assert result.usage is not None
    assert result.usage.output_tokens == 9
    shown = "".join(event.text for event in events if isinstance(event, TextDelta))
    assert shown == result.output
    assert growth <= RSS_BOUND, growth


async def test_a_configured_output_bound_cuts_at_a_character_boundary(workspace: Path) -> None:
    async with open_scripted_model_server(script(text="ab€€€", chunks=5)) as server:
        config = AgentConfig(
            endpoint=endpoint(server.base_url, max_output_bytes=6), workspace=workspace
        )
        with anyio.fail_after(30):
            result = await Agent(config).run("flood-case")
    # "ab€" is 5 bytes; the next "€" would make 8: it is dropped whole.
    assert (result.status, result.output) == ("completed", "ab€" + OUTPUT_TRUNCATION_MARKER)


async def test_a_configured_event_bound_fails_a_larger_event() -> None:
    async with (
        open_scripted_model_server(script(text="y" * 2000)) as server,
        ModelClient(endpoint(server.base_url, max_event_bytes=1000)) as client,
    ):
        with anyio.fail_after(30), pytest.raises(ModelRequestError) as caught:
            await client.complete(MESSAGES)
    assert caught.value.reason == "event-too-large"


def test_the_decoder_bounds_an_event_of_many_lines_and_an_unterminated_line() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    assert decoder.feed(b"data: " + b"a" * 40 + b"\n" + b"data: " + b"b" * 40 + b"\n\n") == [
        "a" * 40 + "\n" + "b" * 40
    ]
    decoder.feed(b"data: " + b"c" * 40 + b"\ndata: " + b"c" * 40 + b"\n")
    with pytest.raises(EventTooLargeError):
        decoder.feed(b"data: " + b"c" * 40 + b"\n")
    with pytest.raises(EventTooLargeError):
        SSEDecoder(max_event_bytes=100).feed(b"data: " + b"d" * 200)
    assert DEFAULT_MAX_EVENT_BYTES == 8 * MIB


@pytest.mark.parametrize("name", ["max_event_bytes", "max_output_bytes"])
@pytest.mark.parametrize("value", [0, -1, True])
def test_bounds_must_be_positive_integers(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"{name} must be a positive integer"):
        ModelEndpoint(**{name: value})  # type: ignore[arg-type]
