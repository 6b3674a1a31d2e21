"""A conversation given to a run and returned by it: typed, JSON, validated, compacted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from model_agent import (
    Agent,
    AgentConfig,
    ChatMessage,
    HistoryError,
    ModelEndpoint,
    parse_history,
)
from model_agent.testing import open_scripted_model_server
from subagent_core import CancelSignal


def config(base_url: str, workspace: Path, **options: Any) -> AgentConfig:
    endpoint = ModelEndpoint(base_url=base_url, api_key="k", model="scripted")
    return AgentConfig(endpoint=endpoint, workspace=workspace, **options)


async def test_a_second_turn_on_a_stored_history_sends_the_first_exchange(
    workspace: Path,
) -> None:
    (workspace / "notes.txt").write_text("hello\n", encoding="utf-8")
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}, "id": "c1"}]}
    script = {
        "rules": [
            {"match": "first", "replies": [read, {"text": "It says hello."}, {"text": "Yes."}]}
        ]
    }
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            first = await Agent(config(server.base_url, workspace)).run("first question")
            stored = json.dumps(list(first.history))
            second = await Agent(config(server.base_url, workspace)).run(
                "and again?", history=parse_history(json.loads(stored))
            )
            sent = server.requests[-1]["messages"]
    assert (first.status, second.status, second.output) == ("completed", "completed", "Yes.")
    assert [message["role"] for message in first.history] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert first.history[0] == {"role": "user", "content": "first question"}
    assert first.history[-1] == {"role": "assistant", "content": "It says hello."}
    assert sent[0]["role"] == "system"
    assert sent[1:] == [*json.loads(stored), {"role": "user", "content": "and again?"}]
    assert second.history == (*first.history, sent[-1], {"role": "assistant", "content": "Yes."})


async def test_without_a_history_the_agent_continues_its_own(workspace: Path) -> None:
    script = {"rules": [{"match": "one", "replies": [{"text": "A"}, {"text": "B"}]}]}
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace))
            await agent.run("one")
            result = await agent.run("two")
            fresh = await agent.run("one again", history=[])
    assert [message["content"] for message in result.history] == ["one", "A", "two", "B"]
    assert [message["content"] for message in fresh.history] == ["one again", "B"]


async def test_a_cancelled_turn_leaves_a_well_formed_history(workspace: Path) -> None:
    cancel = CancelSignal()
    calls = [
        {"name": "list_directory", "arguments": {"path": "."}, "id": "a"},
        {"name": "list_directory", "arguments": {"path": "."}, "id": "b"},
    ]
    script = {"rules": [{"match": "", "replies": [{"tool_calls": calls}]}]}

    def cancel_on_first_tool(event: object) -> None:
        cancel.cancel()

    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace), observer=cancel_on_first_tool)
            result = await agent.run("go", cancel)
    assert result.status == "cancelled"
    assert parse_history(json.loads(json.dumps(list(result.history)))) == result.history
    assert [message["role"] for message in result.history] == ["user", "assistant", "tool", "tool"]


async def test_compaction_summarizes_older_turns_and_keeps_the_current_one(
    workspace: Path,
) -> None:
    older: list[ChatMessage] = [
        {"role": "user", "content": "topic-y " + "x" * 400},
        {"role": "assistant", "content": "y" * 400},
    ]
    script = {
        "rules": [
            {"match": "Summarize the conversation so far", "replies": [{"text": "SUM topic-y"}]},
            {"match": "topic-y", "replies": [{"text": "answer"}]},
        ]
    }
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(server.base_url, workspace, context_budget_chars=500))
            result = await agent.run("short question", history=older)
            summary_request, answer_request = server.requests
    assert result.status == "completed"
    transcript = summary_request["messages"][1]["content"]
    assert "x" * 400 in transcript
    assert "short question" not in transcript
    assert answer_request["messages"][1:] == [
        {"role": "user", "content": "Summary of the earlier conversation:\nSUM topic-y"},
        {"role": "user", "content": "short question"},
    ]
    assert result.history == (
        *answer_request["messages"][1:],
        {"role": "assistant", "content": "answer"},
    )
    assert [entry.kind for entry in result.activity] == ["user", "summary", "answer"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"role": "user"}, "history must be a list of messages"),
        ([{"role": "system", "content": "x"}], "history[0].role must be user, assistant or tool"),
        ([{"role": "user", "content": 1}], "history[0].content must be a string"),
        (
            [{"role": "user", "content": "x", "name": "n"}],
            "history[0] has a field its role does not allow",
        ),
        (
            [{"role": "tool", "content": "x", "tool_call_id": "a"}],
            "history[0] answers no open tool call",
        ),
        (
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                }
            ],
            "history ends with unanswered tool calls",
        ),
        (
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f"}}],
                }
            ],
            "history[0].tool_calls[0].function needs a name and argument text",
        ),
    ],
)
def test_a_malformed_history_is_refused_with_fixed_text(data: object, message: str) -> None:
    with pytest.raises(HistoryError) as caught:
        parse_history(data)
    assert str(caught.value) == message


async def test_run_refuses_a_malformed_history_before_any_request(workspace: Path) -> None:
    agent = Agent(config("http://127.0.0.1:9/v1", workspace))
    with pytest.raises(HistoryError):
        await agent.run("x", history=[{"role": "tool", "content": "x", "tool_call_id": "z"}])
    assert agent.history == ()
