"""The agent loop over the scripted server: rounds, tools, limits, cancel, usage, activity."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from model_agent import (
    ActivityEntry,
    Agent,
    AgentConfig,
    AgentEvent,
    ChildStarted,
    ModelEndpoint,
    TextDelta,
    ToolEnded,
    ToolStarted,
)
from model_agent.testing import open_scripted_model_server
from model_agent.tools import RequestContext, ToolOutcome
from subagent_core import CancelSignal, Usage


def config(base_url: str, workspace: Path, **options: Any) -> AgentConfig:
    endpoint = ModelEndpoint(base_url=base_url, api_key="k", model="scripted")
    return AgentConfig(endpoint=endpoint, workspace=workspace, **options)


def rules(match: str, *replies: dict[str, Any]) -> dict[str, Any]:
    return {"rules": [{"match": match, "replies": list(replies)}]}


def call(name: str, arguments: Any, call_id: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "arguments": arguments}
    if call_id is not None:
        entry["id"] = call_id
    return entry


class CountingTool:
    """An extra tool with a side effect we can count."""

    name = "count"
    description = "Count one."
    parameters: Mapping[str, Any] = {"type": "object", "properties": {}}

    def __init__(self) -> None:
        self.calls: list[Mapping[str, Any]] = []
        self.contexts: list[RequestContext] = []

    async def call(self, arguments: Mapping[str, Any], context: RequestContext) -> ToolOutcome:
        self.calls.append(arguments)
        self.contexts.append(context)
        return ToolOutcome(f"count={len(self.calls)}")


async def test_a_plain_answer_completes_with_usage_events_and_activity(workspace: Path) -> None:
    events: list[AgentEvent] = []
    script = rules(
        "hello",
        {"text": "Hi there", "chunks": 2, "usage": {"prompt_tokens": 11, "completion_tokens": 3}},
    )
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace), observer=events.append)
            result = await agent.run("hello")
    assert result.status == "completed"
    assert result.output == "Hi there"
    assert result.error is None
    assert result.usage == Usage(input_tokens=11, output_tokens=3)
    assert events == [TextDelta("Hi t"), TextDelta("here")]
    assert result.activity == (
        ActivityEntry(kind="user", text="hello"),
        ActivityEntry(kind="answer", text="Hi there"),
    )


async def test_tools_run_in_the_models_order_after_the_round_and_results_are_fed_back(
    workspace: Path,
) -> None:
    (workspace / "a.txt").write_text("alpha", "utf-8")
    (workspace / "b.txt").write_text("beta", "utf-8")
    events: list[AgentEvent] = []
    script = rules(
        "read both",
        {
            "reasoning": "I should read them.",
            "tool_calls": [
                call("read_file", {"path": "b.txt"}, "c1"),
                call("read_file", {"path": "a.txt"}, "c2"),
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        },
        {"text": "done", "usage": {"prompt_tokens": 20, "completion_tokens": 2}},
    )
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace), observer=events.append)
            result = await agent.run("read both")
            second = server.requests[1]["messages"]
    assert (result.status, result.output) == ("completed", "done")
    assert result.usage == Usage(input_tokens=30, output_tokens=7)
    tool_events = [e for e in events if isinstance(e, ToolStarted | ToolEnded)]
    assert tool_events == [
        ToolStarted("c1", "read_file", '{"path": "b.txt"}'),
        ToolEnded("c1", "read_file", "beta", False),
        ToolStarted("c2", "read_file", '{"path": "a.txt"}'),
        ToolEnded("c2", "read_file", "alpha", False),
    ]
    assistant = second[-3]
    assert assistant["role"] == "assistant"
    assert assistant["reasoning_content"] == "I should read them."
    assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "c2"]
    assert second[-2:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "beta"},
        {"role": "tool", "tool_call_id": "c2", "content": "alpha"},
    ]
    assert [entry.kind for entry in result.activity] == [
        "user",
        "reasoning",
        "tool",
        "tool",
        "answer",
    ]
    assert result.activity[2] == ActivityEntry(
        kind="tool", call_id="c1", name="read_file", arguments='{"path": "b.txt"}', text="beta"
    )


async def test_reasoning_is_not_sent_back_on_plain_answer_turns(workspace: Path) -> None:
    script = rules("two turns", {"text": "one", "reasoning": "r"}, {"text": "two"})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace))
            first = await agent.run("two turns")
            second = await agent.run("and again")
            messages = server.requests[1]["messages"]
    assert (first.output, second.output) == ("one", "two")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2] == {"role": "assistant", "content": "one"}
    assert messages[3] == {"role": "user", "content": "and again"}
    assert second.activity[0] == ActivityEntry(kind="user", text="and again")


async def test_a_tool_side_effect_happens_once_when_the_next_request_is_retried(
    workspace: Path, sleep
) -> None:
    tool = CountingTool()
    script = rules(
        "count once",
        {"tool_calls": [call("count", {})]},
        {"drop": "before-response", "times": 2},
        {"text": "counted"},
    )
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace), extra_tools=[tool])
            result = await agent.run("count once")
            assert server.request_count == 4
    assert (result.status, result.output) == ("completed", "counted")
    assert len(tool.calls) == 1
    assert sleep.delays == [0.5, 1.0]
    assert [e.kind for e in result.activity] == ["user", "tool", "retry", "retry", "answer"]


async def test_the_step_limit_ends_the_run_and_keeps_the_conversation_valid(
    workspace: Path,
) -> None:
    tool = CountingTool()
    script = rules("loop", {"tool_calls": [call("count", {})]})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace, max_steps=3), extra_tools=[tool])
            result = await agent.run("loop")
            assert server.request_count == 3
    assert result.status == "step-limit"
    assert len(tool.calls) == 2
    assert agent.messages[-1]["content"] == "tool call not run: the step limit was reached"


async def test_the_default_step_limit_is_50(workspace: Path) -> None:
    assert AgentConfig(endpoint=ModelEndpoint(), workspace=workspace).max_steps == 50


async def test_finish_reason_length_is_max_tokens(workspace: Path) -> None:
    script = rules("long", {"text": "cut sho", "finish_reason": "length"})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            result = await Agent(config(server.base_url, workspace)).run("long")
    assert (result.status, result.output) == ("max-tokens", "cut sho")


async def test_finish_reason_content_filter_is_a_refusal(workspace: Path) -> None:
    script = rules("filtered", {"text": "I can", "finish_reason": "content_filter"})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            result = await Agent(config(server.base_url, workspace)).run("filtered")
    assert (result.status, result.output, result.error) == ("refusal", "I can", None)


async def test_a_failed_request_fails_the_run_with_safe_text_and_partial_output(
    workspace: Path, sleep
) -> None:
    script = rules("fail", {"text": "so far", "drop": "after-text"})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            result = await Agent(config(server.base_url, workspace)).run("fail")
    assert result.status == "failed"
    assert result.output == "so far"
    assert result.error == "model request failed after partial output (stream-cut)"
    assert result.activity[-1] == ActivityEntry(kind="failure", reason="stream-cut")


async def test_an_http_error_body_never_reaches_the_result(workspace: Path, sleep) -> None:
    body = {"error": {"message": "SECRET-SERVER-TEXT"}}
    script = rules("err", {"status": 500, "body": body})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            result = await Agent(config(server.base_url, workspace)).run("err")
    assert result.status == "failed"
    assert result.error == "model request failed (http-500)"
    assert "SECRET" not in repr(result)


async def test_cancel_while_the_model_hangs_ends_cancelled(workspace: Path) -> None:
    cancel = CancelSignal()
    script = rules("hang", {"hang": "after-headers"})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace))
            async with anyio.create_task_group() as group:

                async def cancel_on_arrival() -> None:
                    await server.wait_for_requests(1)
                    cancel.cancel()

                group.start_soon(cancel_on_arrival)
                result = await agent.run("hang", cancel)
    assert (result.status, result.error) == ("cancelled", None)


async def test_cancel_during_a_tool_rejects_the_rest_of_the_round(workspace: Path) -> None:
    cancel = CancelSignal()
    states: list[str] = []

    class CancellingTool(CountingTool):
        async def call(self, arguments: Mapping[str, Any], context: RequestContext) -> ToolOutcome:
            cancel.cancel()
            while context.state == "active":  # the loop's watcher reacts on a later turn
                await anyio.lowlevel.checkpoint()
            states.append(context.state)
            return await super().call(arguments, context)

    tool = CancellingTool()
    script = rules("stop", {"tool_calls": [call("count", {}, "c1"), call("count", {}, "c2")]})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace), extra_tools=[tool])
            result = await agent.run("stop", cancel)
            assert server.request_count == 1
    assert result.status == "cancelled"
    assert states == ["cancelling"]
    assert len(tool.calls) == 1
    assert agent.messages[-1] == {
        "role": "tool",
        "tool_call_id": "c2",
        "content": "tool call not run: the request was cancelled",
    }


async def test_a_committed_result_is_not_replaced_by_a_later_cancel(workspace: Path) -> None:
    cancel = CancelSignal()
    script = rules("quick", {"text": "answered"})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            result = await Agent(config(server.base_url, workspace)).run("quick", cancel)
    cancel.cancel()
    assert (result.status, result.output) == ("completed", "answered")


async def test_late_events_after_the_request_ended_are_dropped(workspace: Path) -> None:
    tool = CountingTool()
    events: list[AgentEvent] = []
    script = rules("late", {"tool_calls": [call("count", {})]}, {"text": "ok"})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(
                config(server.base_url, workspace), observer=events.append, extra_tools=[tool]
            )
            result = await agent.run("late")
    context = tool.contexts[0]
    assert context.state == "terminal"
    seen = len(events)
    context.emit(ChildStarted("late-child", "late"))
    assert context.observer is not None
    context.observer(ChildStarted("late-child", "late"))
    assert context.record(ActivityEntry(kind="child-started", child_id="late-child")) is False
    assert len(events) == seen
    assert all(entry.child_id is None for entry in result.activity)


async def test_a_tool_can_record_child_entries_in_order(workspace: Path) -> None:
    class ChildTool(CountingTool):
        name = "child"

        async def call(self, arguments: Mapping[str, Any], context: RequestContext) -> ToolOutcome:
            context.emit(ChildStarted("k1", "sub"))
            context.record(ActivityEntry(kind="child-started", child_id="k1", name="sub"))
            return ToolOutcome("child done")

    events: list[AgentEvent] = []
    script = rules("kids", {"tool_calls": [call("child", {})]}, {"text": "ok"})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(
                config(server.base_url, workspace),
                observer=events.append,
                extra_tools=[ChildTool()],
            )
            result = await agent.run("kids")
    assert [e.kind for e in result.activity] == ["user", "child-started", "tool", "answer"]
    assert ChildStarted("k1", "sub") in events


async def test_approval_is_asked_before_execute_actions_and_a_refusal_is_a_tool_error(
    workspace: Path,
) -> None:
    asked: list[tuple[str, Mapping[str, Any]]] = []

    async def refuse(name: str, arguments: Mapping[str, Any]) -> bool:
        asked.append((name, dict(arguments)))
        return False

    script = rules(
        "approve",
        {
            "tool_calls": [
                call("write_file", {"path": "x.txt", "content": "x"}),
                call("read_file", {"path": "y"}),
            ]
        },
        {"text": "ok"},
    )
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace, mode="execute", approve=refuse))
            result = await agent.run("approve")
            tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert result.status == "completed"
    assert asked == [("write_file", {"path": "x.txt", "content": "x"})]
    assert tool_messages[0]["content"] == "the user declined this action"
    assert not (workspace / "x.txt").exists()


async def test_an_execute_delegation_is_approved_as_one_action_and_a_refusal_starts_nothing(
    workspace: Path,
) -> None:
    """An Execute child asks nothing itself, so the host approves the delegate call for it."""
    asked: list[str] = []

    async def refuse(name: str, arguments: Mapping[str, Any]) -> bool:
        asked.append(name)
        return False

    script = rules(
        "delegate please",
        {"tool_calls": [call("subagent_delegate", {"task": "t", "description": "d"})]},
        {"text": "ok"},
    )
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace, mode="execute", approve=refuse))
            result = await agent.run("delegate please")
            tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
            requests = server.request_count
    assert result.status == "completed"
    assert asked == ["subagent_delegate"]
    assert tool_messages[0]["content"] == "the user declined this action"
    assert requests == 2  # no child model request was ever made


async def test_invalid_tool_arguments_are_a_tool_error(workspace: Path) -> None:
    script = rules("bad args", {"tool_calls": [call("read_file", "{not json")]}, {"text": "ok"})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            await Agent(config(server.base_url, workspace)).run("bad args")
            tool_message = server.requests[1]["messages"][-1]
    assert tool_message["content"] == "invalid arguments: expected a JSON object"


async def test_a_second_concurrent_run_is_refused(workspace: Path) -> None:
    script = rules("slow", {"text": "x", "first_byte_delay_ms": 200})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace))
            async with anyio.create_task_group() as group:
                group.start_soon(agent.run, "slow")
                await server.wait_for_requests(1)
                with pytest.raises(RuntimeError, match="already in progress"):
                    await agent.run("slow")


async def test_a_long_conversation_is_summarized_under_the_same_rule(
    workspace: Path, sleep
) -> None:
    script = {
        "rules": [
            {
                "match": "Summarize the conversation so far",
                "replies": [{"drop": "before-response"}, {"text": "SUMMARY of topic-x"}],
            },
            {"match": "topic-x", "replies": [{"text": "A" * 300}, {"text": "after summary"}]},
        ]
    }
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace, context_budget_chars=200))
            first = await agent.run("tell me about topic-x")
            second = await agent.run("more")
            last = server.requests[-1]["messages"]
    assert first.output == "A" * 300
    assert (second.status, second.output) == ("completed", "after summary")
    assert sleep.delays == [0.5]
    assert last[1] == {
        "role": "user",
        "content": "Summary of the earlier conversation:\nSUMMARY of topic-x",
    }
    kinds = [entry.kind for entry in second.activity]
    assert kinds == ["user", "retry", "summary", "answer"]


async def test_a_missing_workspace_fails_the_run(tmp_path: Path) -> None:
    agent = Agent(config("http://127.0.0.1:9/v1", tmp_path / "missing"))
    result = await agent.run("x")
    assert (result.status, result.error) == ("failed", "the workspace is not accessible")


def test_the_endpoint_reads_the_deepseek_environment() -> None:
    endpoint = ModelEndpoint.from_env(
        {"DEEPSEEK_API_KEY": "sk-1", "DEEPSEEK_MODEL": "deepseek-reasoner"}
    )
    assert (endpoint.base_url, endpoint.api_key, endpoint.model) == (
        "https://api.deepseek.com",
        "sk-1",
        "deepseek-reasoner",
    )
    assert ModelEndpoint.from_env({}, model="x").model == "x"
    assert dataclasses.replace(endpoint, api_key=None).api_key is None


async def test_a_failing_observer_does_not_change_the_run(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(event: AgentEvent) -> None:
        raise OSError("the UI went away")

    script = rules("observer", {"text": "still fine", "chunks": 2})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            result = await Agent(config(server.base_url, workspace), observer=broken).run(
                "observer"
            )
    assert (result.status, result.output) == ("completed", "still fine")
    assert "agent observer failed" in caplog.text


async def test_a_tool_that_raises_fails_the_run_without_its_exception_text(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class BrokenTool(CountingTool):
        name = "broken"

        async def call(self, arguments: Mapping[str, Any], context: RequestContext) -> ToolOutcome:
            raise RuntimeError("SECRET internal detail")

    script = rules("crash", {"tool_calls": [call("broken", {}, "b1"), call("count", {}, "b2")]})
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(
                config(server.base_url, workspace), extra_tools=[BrokenTool(), CountingTool()]
            )
            result = await agent.run("crash")
    assert (result.status, result.error) == ("failed", "internal error in tool broken")
    assert "SECRET" not in repr(result)
    assert [m["content"] for m in agent.messages if m["role"] == "tool"] == [
        "tool call failed with an internal error",
        "tool call failed with an internal error",
    ]
    assert "tool broken raised" in caplog.text


def test_phase_timeouts_and_retry_statuses_default_to_the_spec() -> None:
    timeouts = ModelEndpoint().timeouts
    assert (
        timeouts.connect_seconds,
        timeouts.first_byte_seconds,
        timeouts.idle_seconds,
        timeouts.total_seconds,
    ) == (10.0, 60.0, 60.0, 600.0)
    assert ModelEndpoint().retry_statuses == frozenset()
    assert ModelEndpoint().model == "deepseek-chat"


def test_a_delegated_child_times_out_after_600_s_by_default(workspace: Path) -> None:
    endpoint = ModelEndpoint(base_url="http://127.0.0.1:9/v1")
    assert AgentConfig(endpoint=endpoint, workspace=workspace).delegate_timeout_seconds == 600.0
