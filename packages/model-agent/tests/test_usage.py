"""Usage totals: every model request of a run and every delegated child, exact numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from model_agent._agent import Agent
from model_agent._config import AgentConfig, ModelEndpoint
from model_agent._usage import add_usage, stream_usage
from model_agent.testing import open_scripted_model_server
from subagent_core import Cost, Usage

LOOK = {"name": "list_directory", "arguments": {"path": "."}, "id": "look"}
DELEGATE = {
    "name": "subagent_delegate",
    "arguments": {"task": "[child] count", "description": "counter"},
    "id": "hand-off",
}


def test_stream_usage_reads_both_cached_shapes_and_ignores_bad_values() -> None:
    openai = {
        "prompt_tokens": 9,
        "completion_tokens": 2,
        "prompt_tokens_details": {"cached_tokens": 4},
    }
    assert stream_usage(openai) == Usage(input_tokens=9, output_tokens=2, cached_input_tokens=4)
    deepseek = {"prompt_tokens": 9, "completion_tokens": 2, "prompt_cache_hit_tokens": 3}
    assert stream_usage(deepseek).cached_input_tokens == 3
    assert stream_usage({"prompt_tokens": -1, "completion_tokens": True}) == Usage()


def test_add_usage_sums_fields_and_keeps_cost_only_in_one_currency() -> None:
    one = Usage(input_tokens=1, cost=Cost(0.5, "USD"))
    two = Usage(input_tokens=2, output_tokens=3, cost=Cost(0.25, "USD"))
    assert add_usage(one, two) == Usage(input_tokens=3, output_tokens=3, cost=Cost(0.75, "USD"))
    assert add_usage(None, None) is None
    assert add_usage(None, two) == two
    assert add_usage(one, Usage(cost=Cost(1.0, "EUR"))) == Usage(input_tokens=1)


async def test_a_run_totals_three_rounds_and_a_delegation(workspace: Path) -> None:
    def usage(prompt: int, completion: int, **more: Any) -> dict[str, Any]:
        return {"prompt_tokens": prompt, "completion_tokens": completion, **more}

    rules = [
        {
            "match": "[parent]",
            "replies": [
                {
                    "tool_calls": [LOOK],
                    "usage": usage(100, 10, prompt_tokens_details={"cached_tokens": 40}),
                },
                {
                    "tool_calls": [DELEGATE],
                    "usage": usage(200, 20, prompt_tokens_details={"cached_tokens": 50}),
                },
                {"text": "done", "usage": usage(300, 30, prompt_cache_hit_tokens=60)},
            ],
        },
        {
            "match": "[child]",
            "replies": [
                {"text": "3", "usage": usage(30, 3, prompt_tokens_details={"cached_tokens": 7})}
            ],
        },
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        config = AgentConfig(
            endpoint=ModelEndpoint(base_url=server.base_url, api_key="unused", model="scripted"),
            workspace=workspace,
            mode="execute",
        )
        with anyio.fail_after(30):
            result = await Agent(config).run("[parent] go")
    assert (result.status, result.output) == ("completed", "done")
    assert server.request_count == 4
    # 100 + 200 + 300 of the parent's rounds, 30 of the child's; cached: 40 + 50 + 60 + 7.
    assert result.usage == Usage(input_tokens=630, output_tokens=63, cached_input_tokens=157)
    delegated = [entry for entry in result.activity if entry.kind == "tool"][-1]
    assert json.loads(delegated.text or "") == {
        "status": "completed",
        "output": "3",
        "modelUsage": {"inputTokens": 30, "outputTokens": 3, "cachedInputTokens": 7},
    }
