"""Structured output through the `model` provider: the endpoint is asked for JSON, the answer
validated with jsonschema, a non-validating one retried once, then `output-schema`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from model_agent import ModelProvider
from model_agent._agent import Agent
from model_agent._config import AgentConfig, ModelEndpoint
from model_agent._output_schema import RETRY_INSTRUCTION
from model_agent._result import OUTPUT_SCHEMA_ERROR
from model_agent.testing import ScriptedModelServer, open_scripted_model_server
from subagent_core import SubagentRegistry, SubagentRequest, SubagentResult

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}
ASKED = {"type": "json_schema", "json_schema": {"name": "output", "schema": SCHEMA}}
DIAGNOSTIC = "Subagent failure (provider: model; stage: answer; category: output-schema)"


def config(server: ScriptedModelServer, workspace: Path) -> AgentConfig:
    return AgentConfig(
        endpoint=ModelEndpoint(base_url=server.base_url, api_key="unused", model="scripted"),
        workspace=workspace,
    )


async def delegate(
    workspace: Path, *replies: dict[str, Any]
) -> tuple[SubagentResult, ScriptedModelServer]:
    rules = [{"match": "[child]", "replies": list(replies)}]
    async with open_scripted_model_server({"rules": rules}) as server:
        registry = SubagentRegistry()
        registry.register(ModelProvider(config(server, workspace)))
        request = SubagentRequest(prompt="[child] count", cwd=workspace, output_schema=SCHEMA)
        with anyio.fail_after(30):
            async with await registry.start("model", request) as run:
                result = await run.result()
    return result, server


async def test_a_valid_first_answer_is_the_structured_output(workspace: Path) -> None:
    result, server = await delegate(workspace, {"json": {"answer": 3}, "text": "not asked"})
    assert (result.stop_reason, result.output, result.diagnostic) == (
        "completed",
        '{"answer":3}',
        None,
    )
    assert result.structured_output == {"answer": 3}
    assert server.response_formats == (ASKED,)


async def test_an_invalid_answer_is_retried_once_then_valid(workspace: Path) -> None:
    result, server = await delegate(
        workspace, {"json": {"answer": "three"}}, {"json": {"answer": 3}}
    )
    assert (result.stop_reason, result.structured_output) == ("completed", {"answer": 3})
    assert server.request_count == 2
    assert server.response_formats == (ASKED, ASKED)
    retry = server.requests[1]["messages"]
    assert retry[-2:] == [
        {"role": "assistant", "content": '{"answer":"three"}'},
        {"role": "user", "content": RETRY_INSTRUCTION},
    ]


async def test_invalid_twice_ends_error_with_output_schema(workspace: Path) -> None:
    result, server = await delegate(workspace, {"text": "three, I think"})
    assert result == SubagentResult(
        stop_reason="error",
        output="three, I think",
        diagnostic=DIAGNOSTIC,
        usage=result.usage,
        structured_output=None,
    )
    assert server.request_count == 2


async def test_the_agent_alone_reports_the_schema_failure(workspace: Path) -> None:
    rules = [{"match": "", "replies": [{"json": [1, 2]}]}]
    async with open_scripted_model_server({"rules": rules}) as server:
        agent_config = config(server, workspace)
        schema_config = AgentConfig(
            endpoint=agent_config.endpoint, workspace=workspace, output_schema=SCHEMA
        )
        with anyio.fail_after(30):
            result = await Agent(schema_config).run("go")
    assert (result.status, result.error, result.structured_output) == (
        "failed",
        OUTPUT_SCHEMA_ERROR,
        None,
    )
    assert [entry.reason for entry in result.activity if entry.kind == "failure"] == [
        "output-schema"
    ]


async def test_without_a_schema_nothing_is_asked_and_text_is_answered(workspace: Path) -> None:
    rules = [{"match": "", "replies": [{"json": {"answer": 3}, "text": "plain"}]}]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("go")
    assert (result.status, result.output, result.structured_output) == ("completed", "plain", None)
    assert server.response_formats == (None,)


@pytest.mark.parametrize(
    "requested",
    [
        "json",
        {"type": "xml"},
        {"type": "json_schema"},
        {"type": "json_schema", "json_schema": {"schema": {}}},
    ],
)
async def test_the_scripted_server_refuses_a_malformed_response_format(requested: object) -> None:
    import httpx

    rules = [{"match": "", "replies": [{"text": "never"}]}]
    async with open_scripted_model_server({"rules": rules}) as server:
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": "x"}],
            "response_format": requested,
        }
        async with httpx.AsyncClient() as client:
            answer = await client.post(f"{server.base_url}/chat/completions", json=body)
    assert answer.status_code == 400
    assert json.loads(answer.text)["error"]["message"] == "invalid response_format"
