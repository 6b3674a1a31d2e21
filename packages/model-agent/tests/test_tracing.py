"""The model agent's requests to its endpoint carry the run's trace context: a `traceparent`
header naming the span current in the run (the run's; a session turn's own), so a traced
endpoint joins the caller's trace; a child it delegates to is a span under its run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from model_agent import Agent, ModelProvider
from model_agent._config import AgentConfig, ModelEndpoint
from model_agent.testing import ScriptedModelServer, open_scripted_model_server
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from subagent_core import SessionRequest, SubagentRegistry, SubagentRequest
from subagent_core.testing import recorded_spans

USAGE = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans this test's runs finish (it runs traced)."""
    with recorded_spans() as exporter:
        yield exporter


def _registry(server: ScriptedModelServer, workspace: Path) -> SubagentRegistry:
    endpoint = ModelEndpoint(base_url=server.base_url, api_key="unused", model="scripted")
    registry = SubagentRegistry()
    registry.register(
        ModelProvider(AgentConfig(endpoint=endpoint, workspace=workspace, mode="execute"))
    )
    return registry


def _traceparent(span: Any) -> str:
    return f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}-01"


async def test_every_model_request_of_a_run_carries_the_run_span(
    spans: InMemorySpanExporter, workspace: Path
) -> None:
    replies = [
        {"tool_calls": [{"name": "list_directory", "arguments": {"path": "."}}], "usage": USAGE},
        {"text": "done", "usage": USAGE},
    ]
    async with open_scripted_model_server(
        {"rules": [{"match": "[r]", "replies": replies}]}
    ) as server:
        registry = _registry(server, workspace)
        with anyio.fail_after(30):
            run = await registry.start("model", SubagentRequest(prompt="[r] go"))
            # The child starts here, outside the registry's span: it runs in the run's context.
            async with run:
                assert (await run.result()).output == "done"
    [span] = spans.get_finished_spans()
    assert server.traceparents == (_traceparent(span),) * 2


async def test_each_session_turn_carries_its_own_span(
    spans: InMemorySpanExporter, workspace: Path
) -> None:
    replies = [{"text": "ONE", "usage": USAGE}, {"text": "TWO", "usage": USAGE}]
    async with open_scripted_model_server(
        {"rules": [{"match": "[s]", "replies": replies}]}
    ) as server:
        registry = _registry(server, workspace)
        with anyio.fail_after(30):
            async with await registry.open_session("model", SessionRequest()) as session:
                for prompt in ("[s] one", "two"):
                    async with await session.run(prompt) as run:
                        await run.result()
    first, second, whole = spans.get_finished_spans()
    assert {span.context.trace_id for span in (first, second)} == {whole.context.trace_id}
    assert server.traceparents == (_traceparent(first), _traceparent(second))


async def test_a_delegated_child_is_a_span_under_the_agent_current_span(
    spans: InMemorySpanExporter, workspace: Path
) -> None:
    """An agent run by its host (no registry above it) sends the host's current span; the
    child it delegates to is a run span under that one, and sends its own."""
    delegate = {
        "name": "subagent_delegate",
        "arguments": {"task": "[child] hi", "description": "greeter"},
    }
    rules = [
        {
            "match": "[parent]",
            "replies": [{"tool_calls": [delegate], "usage": USAGE}, {"text": "ok", "usage": USAGE}],
        },
        {"match": "[child]", "replies": [{"text": "hi", "usage": USAGE}]},
    ]
    tracer = trace.get_tracer("model-agent-tests")
    async with open_scripted_model_server({"rules": rules}) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, api_key="unused", model="scripted")
        agent = Agent(AgentConfig(endpoint=endpoint, workspace=workspace, mode="execute"))
        with anyio.fail_after(30), tracer.start_as_current_span("host"):
            assert (await agent.run("[parent] go")).output == "ok"
    child, host = spans.get_finished_spans()
    assert child.name == "invoke_agent model"
    assert child.parent is not None
    assert (child.context.trace_id, child.parent.span_id) == (
        host.context.trace_id,
        host.context.span_id,
    )
    assert server.traceparents == (
        _traceparent(host),
        _traceparent(child),
        _traceparent(host),
    )
