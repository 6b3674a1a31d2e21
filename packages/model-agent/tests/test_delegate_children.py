"""`subagent_delegate` with `children`: one call, several children at once, under the limit of 3."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from model_agent._agent import Agent, AgentResult
from model_agent._config import AgentConfig, ModelEndpoint
from model_agent._delegate_queue import delegate_queue
from model_agent._delegate_tool import SubagentDelegateTool
from model_agent.testing import ScriptedModelServer, open_scripted_model_server

USAGE = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}


@pytest.fixture(autouse=True)
def slots_are_released() -> Iterator[None]:
    yield
    queue = delegate_queue()
    assert (queue.running, queue.queued) == (0, 0)


def fan(*children: dict[str, Any]) -> dict[str, Any]:
    call = {"name": "subagent_delegate", "arguments": {"children": list(children)}}
    return {"tool_calls": [call], "usage": USAGE}


def child(task: str, description: str = "helper", **extra: Any) -> dict[str, Any]:
    return {"task": task, "description": description, **extra}


def config(server: ScriptedModelServer, workspace: Path) -> AgentConfig:
    return AgentConfig(
        endpoint=ModelEndpoint(base_url=server.base_url, api_key="unused", model="scripted"),
        workspace=workspace,
        mode="execute",
    )


def delegate_call(result: AgentResult) -> tuple[dict[str, Any], bool]:
    (entry,) = [e for e in result.activity if e.kind == "tool"]
    return json.loads(entry.text or ""), entry.is_error


def child_rule(n: int, **reply: Any) -> dict[str, Any]:
    return {
        "match": f"[child {n}]",
        "replies": [{"text": f"c{n}", "usage": USAGE, "first_byte_delay_ms": 200, **reply}],
    }


async def test_children_run_at_once_and_each_result_is_structured_as_one_call(
    workspace: Path,
) -> None:
    rules: list[dict[str, Any]] = [
        {
            "match": "[parent]",
            "replies": [
                fan(*(child(f"[child {n}] work", f"part {n}") for n in range(3))),
                {"text": "done", "usage": USAGE},
            ],
        },
        *(child_rule(n) for n in range(3)),
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("[parent] go")
        peak = server.max_in_flight_for("[child ")
    assert peak == 3
    one = {"status": "completed", "modelUsage": {"inputTokens": 11, "outputTokens": 5}}
    assert delegate_call(result) == (
        {
            "status": "completed",
            "children": [{**one, "output": f"c{n}"} for n in range(3)],
        },
        False,
    )
    ended = [(e.name, e.status) for e in result.activity if e.kind == "child-ended"]
    assert sorted(ended) == [(f"part {n}", "completed") for n in range(3)]
    assert (result.status, result.output) == ("completed", "done")


async def test_more_children_than_the_limit_wait_for_a_slot(workspace: Path) -> None:
    rules: list[dict[str, Any]] = [
        {
            "match": "[parent]",
            "replies": [
                fan(*(child(f"[child {n}] work") for n in range(5))),
                {"text": "done", "usage": USAGE},
            ],
        },
        *(child_rule(n) for n in range(5)),
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("[parent] go")
        peak = server.max_in_flight_for("[child ")
    assert peak == 3
    content, is_error = delegate_call(result)
    assert [c["output"] for c in content["children"]] == [f"c{n}" for n in range(5)]
    assert is_error is False


async def test_one_failing_child_fails_the_call_and_the_others_keep_their_answers(
    workspace: Path,
) -> None:
    rules: list[dict[str, Any]] = [
        {
            "match": "[parent]",
            "replies": [
                fan(child("[child 0] work"), child("[child 1] fail")),
                {"text": "done", "usage": USAGE},
            ],
        },
        child_rule(0),
        {"match": "[child 1]", "replies": [{"status": 500}]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("[parent] go")
    content, is_error = delegate_call(result)
    assert content == {
        "status": "failed",
        "children": [
            {
                "status": "completed",
                "output": "c0",
                "modelUsage": {"inputTokens": 11, "outputTokens": 5},
            },
            {"status": "failed", "output": "", "error": "subagent run failed"},
        ],
    }
    assert is_error is True


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (
            {"children": [child("[child 0] x")], "task": "t"},
            "invalid arguments: give either `children` or task/description/tools, not both",
        ),
        ({"children": []}, "invalid arguments: `children` must not be empty"),
        ({"children": "x"}, "invalid arguments: `children` must be a list of objects"),
        (
            {"children": [child(f"[child {n}] x") for n in range(9)]},
            "invalid arguments: at most 8 children in one call",
        ),
        (
            {"children": [child("[child 0] x"), child("[child 1] x", tools=["nope"])]},
            "invalid arguments: `tools` may only name tools this request has",
        ),
        (
            {"children": [child("[child 0] x"), {"task": "[child 1] x"}]},
            "invalid arguments: `description` must be a non-empty string",
        ),
    ],
)
async def test_a_bad_entry_fails_the_whole_call_before_any_child_starts(
    workspace: Path, arguments: dict[str, Any], error: str
) -> None:
    call = {"tool_calls": [{"name": "subagent_delegate", "arguments": arguments}]}
    rules = [
        {"match": "[parent]", "replies": [call, {"text": "done"}]},
        {"match": "[child", "replies": [{"text": "never"}]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("[parent] go")
        asked = server.max_in_flight_for("[child")
    assert delegate_call(result) == ({"status": "failed", "output": "", "error": error}, True)
    assert asked == 0


def test_the_description_says_children_share_the_workspace() -> None:
    description = SubagentDelegateTool.description
    assert "`children`" in description
    assert "share this workspace" in description
    assert "no separate copies or worktrees" in description
