"""Usage and cost over real stdio: token totals from the `session/prompt` answer, the cost from
`usage_update` notifications; an invalid cost is dropped, never the run."""

from __future__ import annotations

import anyio
import pytest
from subagent_acp import ACPProvider
from subagent_core import (
    Cost,
    MessageChunk,
    SubagentEvent,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    Usage,
    UsageEvent,
)

TOKENS = {"totalTokens": 190, "inputTokens": 120, "outputTokens": 70, "cachedReadTokens": 80}


def usage_update(cost: object = ...) -> dict[str, object]:
    update: dict[str, object] = {"sessionUpdate": "usage_update", "used": 190, "size": 128000}
    if cost is not ...:
        update["cost"] = cost
    return update


async def run_collecting(config) -> tuple[SubagentResult, list[SubagentEvent]]:
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    events: list[SubagentEvent] = []
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        async with run, anyio.create_task_group() as tg:

            async def collect() -> None:
                async for event in run.events():
                    events.append(event)

            tg.start_soon(collect)
            result = await run.result()
    return result, events


async def test_tokens_cached_tokens_and_cost_are_the_exact_usage(make_config) -> None:
    script = {
        "updates": [
            usage_update({"amount": 0.01, "currency": "USD"}),
            usage_update(),  # no cost: the last one stands
            usage_update({"amount": 0.0125, "currency": "USD"}),
        ],
        "text": "ok",
        "usage": TOKENS,
    }
    result, events = await run_collecting(make_config(script))
    cost = Cost(0.0125, "USD")
    assert result == SubagentResult(
        stop_reason="completed",
        output="ok",
        usage=Usage(input_tokens=120, output_tokens=70, cached_input_tokens=80, cost=cost),
    )
    assert events == [
        UsageEvent(cost=Cost(0.01, "USD")),
        UsageEvent(cost=cost),
        MessageChunk(text="ok"),
        UsageEvent(input_tokens=120, output_tokens=70, cached_input_tokens=80, cost=cost),
    ]


@pytest.mark.parametrize(
    "cost",
    [
        {"amount": 0.5, "currency": "usd"},
        {"amount": 0.5, "currency": "US$"},
        {"amount": 0.5, "currency": "DOLLARS"},
        {"amount": -1, "currency": "USD"},
        {"amount": "a lot", "currency": "USD"},
        {"currency": "USD"},
        "free",
    ],
)
async def test_an_invalid_cost_drops_the_cost_never_the_run(make_config, cost: object) -> None:
    script = {"updates": [usage_update(cost)], "text": "ok", "usage": TOKENS}
    result, events = await run_collecting(make_config(script))
    assert result == SubagentResult(
        stop_reason="completed",
        output="ok",
        usage=Usage(input_tokens=120, output_tokens=70, cached_input_tokens=80, cost=None),
    )
    assert events == [
        MessageChunk(text="ok"),
        UsageEvent(input_tokens=120, output_tokens=70, cached_input_tokens=80),
    ]


async def test_a_cost_without_token_counts_is_still_usage(make_config) -> None:
    script = {"updates": [usage_update({"amount": 2, "currency": "EUR"})], "text": "ok"}
    result, _ = await run_collecting(make_config(script))
    assert result.usage == Usage(cost=Cost(2.0, "EUR"))


async def test_usage_without_cached_tokens_leaves_them_none(make_config) -> None:
    usage = {"totalTokens": 3, "inputTokens": 1, "outputTokens": 2}
    result, _ = await run_collecting(make_config({"usage": usage}))
    assert result.usage == Usage(input_tokens=1, output_tokens=2)


async def test_a_failed_run_keeps_the_cost_reported_before(make_config) -> None:
    script = {
        "updates": [usage_update({"amount": 0.25, "currency": "USD"})],
        "text": "partial",
        "crash": {"at": "after_prompt_output", "exit_code": 3},
    }
    result, _ = await run_collecting(make_config(script))
    assert (result.stop_reason, result.output) == ("error", "partial")
    assert result.usage == Usage(cost=Cost(0.25, "USD"))
