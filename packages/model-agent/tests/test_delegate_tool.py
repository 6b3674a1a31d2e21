"""subagent_delegate through real Agents and the real scripted model server on loopback."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from model_agent import _delegate_tool as delegate_module
from model_agent._activity import ActivityEntry
from model_agent._agent import Agent, AgentResult
from model_agent._config import AgentConfig, ModelEndpoint
from model_agent._delegate_queue import DelegateQueue, delegate_queue
from model_agent._delegate_tool import SubagentDelegateTool, outcome_of
from model_agent._events import (
    AgentEvent,
    ChildEnded,
    ChildEvent,
    ChildStarted,
    ReasoningDelta,
    TextDelta,
    ToolEnded,
    ToolStarted,
)
from model_agent._tool import Mode, RequestContext, ToolOutcome
from model_agent.testing import ScriptedModelServer, open_scripted_model_server
from subagent_core import CancelSignal, SubagentRequest, SubagentResult, SubagentRun
from subagent_core.testing import poll_until

READ_TOOLS = ["read_file", "list_directory", "search_text"]
USAGE = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}


@pytest.fixture(autouse=True)
def slots_are_released() -> Iterator[None]:
    """Every test leaves the process-wide queue empty: slots are released on every end."""
    yield
    queue = delegate_queue()
    assert (queue.running, queued := queue.queued) == (0, 0), queued


def delegate(
    task: str, description: str = "helper", tools: Sequence[str] | None = None
) -> dict[str, Any]:
    arguments: dict[str, Any] = {"task": task, "description": description}
    if tools is not None:
        arguments["tools"] = list(tools)
    return {"tool_calls": [{"name": "subagent_delegate", "arguments": arguments}], "usage": USAGE}


def answer(text: str) -> dict[str, Any]:
    return {"text": text, "usage": USAGE}


def config(
    server: ScriptedModelServer, workspace: Path, *, mode: Mode = "execute", **overrides: Any
) -> AgentConfig:
    return AgentConfig(
        endpoint=ModelEndpoint(base_url=server.base_url, api_key="unused", model="scripted"),
        workspace=workspace,
        mode=mode,
        **overrides,
    )


def tool_entries(result: AgentResult) -> list[ActivityEntry]:
    return [entry for entry in result.activity if entry.kind == "tool"]


def child_entries(result: AgentResult) -> list[tuple[str, str | None, str | None, str | None]]:
    return [
        (entry.kind, entry.name, entry.status, entry.text)
        for entry in result.activity
        if entry.kind in ("child-started", "child-ended")
    ]


def requests_of(server: ScriptedModelServer, marker: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for body in server.requests:
        users = [m for m in body["messages"] if m.get("role") == "user"]
        if users and marker in str(users[0].get("content")):
            out.append(body)
    return out


def offered(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def last_tool_message(body: dict[str, Any]) -> str:
    return [m for m in body["messages"] if m.get("role") == "tool"][-1]["content"]


async def test_a_child_completes_and_the_parent_sees_its_answer(workspace: Path) -> None:
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] say hi", "greeter"), answer("done")]},
        {"match": "[child]", "replies": [answer("child says hi")]},
    ]
    events: list[AgentEvent] = []
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace), observer=events.append).run(
                "[parent] go"
            )
    assert (result.status, result.output) == ("completed", "done")
    expected = {
        "status": "completed",
        "output": "child says hi",
        "modelUsage": {"inputTokens": 11, "outputTokens": 5},
    }
    (call,) = tool_entries(result)
    assert json.loads(call.text or "") == expected
    assert json.loads(last_tool_message(server.requests[-1])) == expected
    assert child_entries(result) == [
        ("child-started", "greeter", None, None),
        ("child-ended", "greeter", "completed", "child says hi"),
    ]
    started = [e for e in events if isinstance(e, ChildStarted)]
    ended = [e for e in events if isinstance(e, ChildEnded)]
    assert [(e.description) for e in started] == ["greeter"]
    assert [(e.child_id, e.description, e.status) for e in ended] == [
        (started[0].child_id, "greeter", "completed")
    ]
    ids = [e.child_id for e in result.activity if e.kind.startswith("child-")]
    assert ids == [started[0].child_id] * 2


async def test_child_of_an_ask_parent_is_read_only_and_cannot_delegate(workspace: Path) -> None:
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] look"), answer("done")]},
        {"match": "[child]", "replies": [answer("looked")]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace, mode="ask")).run("[parent] go")
    assert result.status == "completed"
    (parent_first, *_) = requests_of(server, "[parent]")
    assert offered(parent_first) == [*READ_TOOLS, "subagent_delegate"]
    (child,) = requests_of(server, "[child]")
    assert offered(child) == READ_TOOLS


async def test_child_of_an_execute_parent_has_the_process_tool_but_not_delegation(
    workspace: Path,
) -> None:
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] act"), answer("done")]},
        {"match": "[child]", "replies": [answer("acted")]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            parent = Agent(config(server, workspace))
            result = await parent.run("[parent] go")
    assert result.status == "completed"
    (child,) = requests_of(server, "[child]")
    expected = [name for name in parent.tool_names if name != "subagent_delegate"]
    assert "process_execute" in expected or sys.platform == "win32"
    assert "write_file" in expected
    assert offered(child) == expected


async def test_a_tool_subset_narrows_the_child(workspace: Path) -> None:
    rules = [
        {
            "match": "[parent]",
            "replies": [delegate("[child] read", tools=["read_file"]), answer("ok")],
        },
        {"match": "[child]", "replies": [answer("read")]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("[parent] go")
    assert result.status == "completed"
    (child,) = requests_of(server, "[child]")
    assert offered(child) == ["read_file"]


@pytest.mark.parametrize(
    ("mode", "tools", "message"),
    [
        (
            "ask",
            ["process_execute"],
            "invalid arguments: `tools` may only name tools this request has",
        ),
        ("ask", ["write_file"], "invalid arguments: `tools` may only name tools this request has"),
        (
            "execute",
            ["no_such_tool"],
            "invalid arguments: `tools` may only name tools this request has",
        ),
        (
            "execute",
            ["subagent_delegate"],
            "invalid arguments: a child cannot be given subagent_delegate",
        ),
    ],
)
async def test_a_child_asking_for_a_tool_the_parent_lacks_is_refused(
    workspace: Path, mode: Mode, tools: list[str], message: str
) -> None:
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] x", tools=tools), answer("ok")]},
        {"match": "[child]", "replies": [answer("never")]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace, mode=mode)).run("[parent] go")
    (call,) = tool_entries(result)
    assert json.loads(call.text or "") == {"status": "failed", "output": "", "error": message}
    assert call.is_error is True
    assert requests_of(server, "[child]") == []
    assert child_entries(result) == []


async def test_a_forged_delegate_call_from_a_child_fails(workspace: Path) -> None:
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] try"), answer("ok")]},
        {"match": "[child]", "replies": [delegate("[grandchild] no"), answer("could not")]},
        {"match": "[grandchild]", "replies": [answer("never")]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("[parent] go")
    assert result.status == "completed"
    assert requests_of(server, "[grandchild]") == []
    child_second = requests_of(server, "[child]")[1]
    assert last_tool_message(child_second) == (
        "tool call rejected: subagent_delegate is not available to a delegated child "
        "(maximum depth is 1)"
    )


def direct_context(workspace: Path, **overrides: Any) -> RequestContext:
    stat = os.stat(workspace)
    fields: dict[str, Any] = {
        "runtime": "model",
        "mode": "execute",
        "space": "local",
        "depth": 0,
        "workspace": workspace,
        "workspace_identity": (stat.st_dev, stat.st_ino),
        "shell": "/bin/sh",
        "tool_names": ("read_file", "subagent_delegate"),
        "cancel": CancelSignal(),
    }
    fields.update(overrides)
    return RequestContext(**fields)


def unreachable_config(workspace: Path) -> AgentConfig:
    # Port 9 on loopback: nothing may ever be asked of it in these tests.
    return AgentConfig(
        endpoint=ModelEndpoint(base_url="http://127.0.0.1:9/v1"), workspace=workspace
    )


@pytest.mark.parametrize(
    ("overrides", "arguments", "message"),
    [
        (
            {"depth": 1},
            {"task": "t", "description": "d"},
            "subagent_delegate refused: a delegated child cannot delegate (maximum depth is 1)",
        ),
        (
            {"runtime": "continue"},
            {"task": "t", "description": "d"},
            "subagent_delegate refused: only the direct model runtime has this tool",
        ),
        (
            {"space": "ssh"},
            {"task": "t", "description": "d"},
            "subagent_delegate refused: not available in this execution space",
        ),
        (
            {"tool_names": ("read_file",)},
            {"task": "t", "description": "d"},
            "subagent_delegate refused: the tool is not enabled for this request",
        ),
        (
            {"state": "cancelling"},
            {"task": "t", "description": "d"},
            "subagent_delegate refused: the request is no longer active",
        ),
        ({}, {"description": "d"}, "invalid arguments: `task` must be a non-empty string"),
        (
            {},
            {"task": " ", "description": "d"},
            "invalid arguments: `task` must be a non-empty string",
        ),
        ({}, {"task": "t"}, "invalid arguments: `description` must be a non-empty string"),
        (
            {},
            {"task": "t", "description": "d", "tools": "read_file"},
            "invalid arguments: `tools` must be a list of tool names",
        ),
        (
            {},
            {"task": "t", "description": "d", "mode": "execute"},
            "invalid arguments: unknown argument(s); allowed: task, description, tools",
        ),
    ],
)
async def test_invalid_or_forged_calls_fail_before_anything_starts(
    workspace: Path, overrides: dict[str, Any], arguments: dict[str, Any], message: str
) -> None:
    tool = SubagentDelegateTool(unreachable_config(workspace), agent_factory=Agent)
    with anyio.fail_after(30):
        outcome = await tool.call(arguments, direct_context(workspace, **overrides))
    assert outcome.is_error is True
    assert json.loads(outcome.content) == {"status": "failed", "output": "", "error": message}


async def test_child_failure_is_a_failed_result(workspace: Path) -> None:
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] fail"), answer("ok")]},
        {"match": "[child]", "replies": [{"status": 500}]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("[parent] go")
    (call,) = tool_entries(result)
    assert json.loads(call.text or "") == {
        "status": "failed",
        "output": "",
        "error": "subagent run failed",
    }
    assert call.is_error is True
    assert child_entries(result)[-1] == ("child-ended", "helper", "failed", "")
    assert (result.status, result.output) == ("completed", "ok")


async def test_child_token_limit_is_failed_with_partial_output(workspace: Path) -> None:
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] long"), answer("ok")]},
        {
            "match": "[child]",
            "replies": [{"text": "half an ans", "finish_reason": "length", "usage": USAGE}],
        },
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("[parent] go")
    (call,) = tool_entries(result)
    assert json.loads(call.text or "") == {
        "status": "failed",
        "output": "half an ans",
        "error": "subagent run hit its token limit before finishing",
        "modelUsage": {"inputTokens": 11, "outputTokens": 5},
    }


async def test_a_child_that_declines_is_failed(workspace: Path) -> None:
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] no"), answer("ok")]},
        {"match": "[child]", "replies": [{"text": "", "finish_reason": "content_filter"}]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("[parent] go")
    (call,) = tool_entries(result)
    body = json.loads(call.text or "")
    body.pop("modelUsage", None)
    assert body == {"status": "failed", "output": "", "error": "subagent declined the task"}


async def test_a_child_over_its_timeout_is_cancelled(workspace: Path) -> None:
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] hang"), answer("ok")]},
        {"match": "[child]", "replies": [{"hang": "after-headers"}]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace, delegate_timeout_seconds=0.5)).run(
                "[parent] go"
            )
    (call,) = tool_entries(result)
    assert json.loads(call.text or "") == {
        "status": "cancelled",
        "output": "",
        "error": "subagent run was cancelled: it exceeded its 0.5 s timeout",
    }
    assert child_entries(result)[-1] == ("child-ended", "helper", "cancelled", "")


async def test_a_full_queue_fails_the_call_with_live_figures(workspace: Path) -> None:
    queue = DelegateQueue()
    hold = CancelSignal()
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                assert await queue.acquire(hold)
            for _ in range(32):
                tg.start_soon(queue.acquire, hold)
            await poll_until(lambda: queue.queued == 32)
            tool = SubagentDelegateTool(
                unreachable_config(workspace), agent_factory=Agent, queue=queue
            )
            outcome = await tool.call({"task": "t", "description": "d"}, direct_context(workspace))
            hold.cancel()
        for _ in range(3):
            queue.release()
    assert json.loads(outcome.content) == {
        "status": "failed",
        "output": "",
        "error": "subagent queue is full (running: 3, queued: 32, limit: 3)",
    }
    assert outcome.is_error is True
    assert (queue.running, queue.queued) == (0, 0)


async def test_a_child_cancelled_while_queued_never_starts(workspace: Path) -> None:
    rules = [{"match": "[child]", "replies": [answer("never")]}]
    queue = DelegateQueue()
    hold = CancelSignal()
    cancel = CancelSignal()
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            for _ in range(3):
                assert await queue.acquire(hold)
            outcomes: list[ToolOutcome] = []
            tool = SubagentDelegateTool(config(server, workspace), agent_factory=Agent, queue=queue)
            context = direct_context(workspace, cancel=cancel)

            async def call() -> None:
                outcomes.append(await tool.call({"task": "[child] x", "description": "d"}, context))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await poll_until(lambda: queue.queued == 1)
                cancel.cancel()
            assert (queue.running, queue.queued) == (3, 0)
            for _ in range(3):
                queue.release()
        assert server.request_count == 0
    assert json.loads(outcomes[0].content) == {
        "status": "cancelled",
        "output": "",
        "error": "subagent run was cancelled before it started",
    }
    assert context.activity.snapshot() == ()


async def test_tool_calls_of_one_parent_run_one_at_a_time_in_order(workspace: Path) -> None:
    both = {
        "tool_calls": [
            {"name": "subagent_delegate", "arguments": {"task": "[child A] a", "description": "A"}},
            {"name": "subagent_delegate", "arguments": {"task": "[child B] b", "description": "B"}},
        ]
    }
    rules = [
        {"match": "[parent]", "replies": [both, answer("ok")]},
        {"match": "[child A]", "replies": [{"text": "a", "first_byte_delay_ms": 200}]},
        {"match": "[child B]", "replies": [answer("b")]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("[parent] go")
    assert child_entries(result) == [
        ("child-started", "A", None, None),
        ("child-ended", "A", "completed", "a"),
        ("child-started", "B", None, None),
        ("child-ended", "B", "completed", "b"),
    ]
    assert server.max_in_flight == 1


async def test_parent_cancel_reaches_running_children_and_their_processes(
    workspace: Path, process_leak_guard: list[int]
) -> None:
    if sys.platform == "win32":
        pytest.skip("POSIX shell command")
    parents = 3
    rules: list[dict[str, Any]] = []
    for n in range(parents):
        command = f"touch ready-{n}; sleep 1000 & sleep 1000"
        run_it = {"tool_calls": [{"name": "process_execute", "arguments": {"command": command}}]}
        rules.append(
            {"match": f"[parent {n}]", "replies": [delegate(f"[child {n}] run"), answer("x")]}
        )
        rules.append({"match": f"[child {n}]", "replies": [run_it, answer("never")]})
    cancel = CancelSignal()
    results: dict[int, AgentResult] = {}
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for n in range(parents):

                    async def one(n: int = n) -> None:
                        agent = Agent(config(server, workspace))
                        results[n] = await agent.run(f"[parent {n}] go", cancel)

                    tg.start_soon(one)
                for n in range(parents):
                    marker = workspace / f"ready-{n}"
                    await poll_until(lambda marker=marker: os.path.exists(marker))
                cancel.cancel()
    assert len(process_leak_guard) == parents
    for n in range(parents):
        result = results[n]
        assert result.status == "cancelled"
        (call,) = tool_entries(result)
        body = json.loads(call.text or "")
        assert (body["status"], body["error"]) == ("cancelled", "subagent run was cancelled")
        assert child_entries(result)[-1][:3] == ("child-ended", "helper", "cancelled")


async def test_ten_parents_share_three_child_slots_in_fifo_order(workspace: Path) -> None:
    parents = 10
    rules: list[dict[str, Any]] = []
    for n in range(parents):
        rules.append(
            {"match": f"[parent {n}]", "replies": [delegate(f"[child {n}] work"), answer("ok")]}
        )
        rules.append(
            {"match": f"[child {n}]", "replies": [{"text": f"c{n}", "first_byte_delay_ms": 150}]}
        )
    order: list[tuple[str, str]] = []

    def observer(n: int) -> Callable[[AgentEvent], None]:
        def see(event: AgentEvent) -> None:
            if isinstance(event, ToolStarted) and event.name == "subagent_delegate":
                order.append(("queued", f"{n}"))
            if isinstance(event, ChildStarted):
                order.append(("started", f"{n}"))

        return see

    results: dict[int, AgentResult] = {}
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for n in range(parents):

                    async def one(n: int = n) -> None:
                        agent = Agent(config(server, workspace), observer=observer(n))
                        results[n] = await agent.run(f"[parent {n}] go")

                    tg.start_soon(one)
        child_peak = server.max_in_flight_for("[child ")
    assert child_peak == 3
    assert all(results[n].status == "completed" for n in range(parents))
    queued = [who for kind, who in order if kind == "queued"]
    started = [who for kind, who in order if kind == "started"]
    assert started == queued
    assert sorted(started) == [str(n) for n in range(parents)]


async def test_parent_cancel_reaches_queued_and_running_children(workspace: Path) -> None:
    parents = 4
    rules: list[dict[str, Any]] = []
    for n in range(parents):
        rules.append(
            {"match": f"[parent {n}]", "replies": [delegate(f"[child {n}] wait"), answer("x")]}
        )
        rules.append({"match": f"[child {n}]", "replies": [{"hang": "after-headers"}]})
    cancel = CancelSignal()
    results: dict[int, AgentResult] = {}
    queue = delegate_queue()
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for n in range(parents):

                    async def one(n: int = n) -> None:
                        agent = Agent(config(server, workspace))
                        results[n] = await agent.run(f"[parent {n}] go", cancel)

                    tg.start_soon(one)
                await poll_until(lambda: queue.queued == 1)
                await poll_until(lambda: server.max_in_flight_for("[child ") == 3)
                cancel.cancel()
        child_requests = len(requests_of(server, "[child "))
    assert child_requests == 3
    endings = sorted(
        (
            json.loads(tool_entries(results[n])[0].text or "")["error"],
            len(child_entries(results[n])),
        )
        for n in range(parents)
    )
    assert endings == [
        ("subagent run was cancelled", 2),
        ("subagent run was cancelled", 2),
        ("subagent run was cancelled", 2),
        ("subagent run was cancelled before it started", 0),
    ]
    assert all(results[n].status == "cancelled" for n in range(parents))


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param({"text": "half done", "error": {"message": "SECRET in-band"}}, id="in-band"),
        pytest.param({"text": "half done", "drop": "after-text"}, id="cut-after-text"),
    ],
)
async def test_a_child_failing_after_text_is_failed_with_its_partial_output_and_no_server_text(
    workspace: Path, failure: dict[str, Any]
) -> None:
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] work"), answer("ok")]},
        {"match": "[child]", "replies": [failure]},
        {"match": "[child]", "replies": [{"status": 500, "body": {"error": "SECRET body"}}]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("[parent] go")
        assert len(requests_of(server, "[child]")) == 1
    (call,) = tool_entries(result)
    assert json.loads(call.text or "") == {
        "status": "failed",
        "output": "half done",
        "error": "subagent run failed",
    }
    assert child_entries(result)[-1] == ("child-ended", "helper", "failed", "half done")
    assert "SECRET" not in repr(result)


def test_a_diagnostic_follows_the_headline_and_the_output_stays_apart() -> None:
    result = SubagentResult(stop_reason="aborted", output="partial", diagnostic="remote abort")
    outcome = outcome_of(result)
    assert outcome.is_error is True
    assert json.loads(outcome.content) == {
        "status": "failed",
        "output": "partial",
        "error": "subagent run was cancelled\nDiagnostic: remote abort",
    }


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell command")
async def test_an_approved_execute_child_runs_its_command_without_asking_again(
    workspace: Path,
) -> None:
    asked: list[str] = []

    async def approve(name: str, arguments: Any) -> bool:
        asked.append(name)
        return True

    run_it = {"tool_calls": [{"name": "process_execute", "arguments": {"command": "touch ran"}}]}
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] act"), answer("ok")]},
        {"match": "[child]", "replies": [run_it, answer("did it")]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace, approve=approve)).run("[parent] go")
    assert asked == ["subagent_delegate"]
    assert (workspace / "ran").exists()
    (call,) = tool_entries(result)
    assert json.loads(call.text or "")["output"] == "did it"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell command")
async def test_cancelling_the_parent_task_from_outside_reaches_the_child_and_its_command(
    workspace: Path, process_leak_guard: list[int]
) -> None:
    """Host exit cancels the parent's task (no cancel signal): the child and its tree go too."""
    command = "touch ready; sleep 1000 & sleep 1000"
    run_it = {"tool_calls": [{"name": "process_execute", "arguments": {"command": command}}]}
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] run"), answer("x")]},
        {"match": "[child]", "replies": [run_it, answer("never")]},
    ]
    finished: list[AgentResult] = []
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:

                async def parent() -> None:
                    finished.append(await Agent(config(server, workspace)).run("[parent] go"))

                tg.start_soon(parent)
                await poll_until(lambda: os.path.exists(workspace / "ready"))
                tg.cancel_scope.cancel()
    assert finished == []
    assert len(process_leak_guard) == 1


@pytest.mark.parametrize(("mode", "allowed"), [("ask", False), ("execute", True)])
async def test_only_an_execute_parent_lets_its_child_write(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, mode: Mode, allowed: bool
) -> None:
    requests: list[SubagentRequest] = []

    class RecordingProvider(delegate_module.ChildProvider):
        async def start(self, request: SubagentRequest) -> SubagentRun:
            requests.append(request)
            return await super().start(request)

    monkeypatch.setattr(delegate_module, "ChildProvider", RecordingProvider)
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] look"), answer("done")]},
        {"match": "[child]", "replies": [answer("looked")]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace, mode=mode)).run("[parent] go")
    assert result.status == "completed"
    assert [request.allow_writes for request in requests] == [allowed]


async def test_the_parents_observer_follows_the_child_live(workspace: Path) -> None:
    think = {
        "reasoning": "hmm",
        "tool_calls": [{"name": "list_directory", "arguments": {"path": "."}, "id": "l1"}],
    }
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] look", "looker"), answer("done")]},
        {"match": "[child]", "replies": [think, answer("seen")]},
    ]
    events: list[AgentEvent] = []
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace), observer=events.append).run(
                "[parent] go"
            )
    assert result.status == "completed"
    started = next(e for e in events if isinstance(e, ChildStarted))
    inside = events[events.index(started) + 1 :]
    child = [e for e in inside if isinstance(e, ChildEvent)]
    assert all(e.child_id == started.child_id for e in child)
    assert [e.event for e in child] == [
        ReasoningDelta("hmm"),
        ToolStarted("l1", "list_directory", '{"path": "."}'),
        ToolEnded("l1", "list_directory", "(empty directory)", False),
        TextDelta("seen"),
    ]
    ended = next(e for e in inside if isinstance(e, ChildEnded))
    assert inside.index(ended) == len(child)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell command")
@pytest.mark.parametrize("allow", [True, False])
async def test_a_host_can_ask_for_each_action_of_a_child(workspace: Path, allow: bool) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def approve(name: str, arguments: Any) -> bool:
        asked.append((name, dict(arguments)))
        return name == "subagent_delegate" or allow

    run_it = {"tool_calls": [{"name": "process_execute", "arguments": {"command": "touch ran"}}]}
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] act"), answer("ok")]},
        {"match": "[child]", "replies": [run_it, answer("did it")]},
    ]
    options = {"approve": approve, "approve_child_actions": True}
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace, **options)).run("[parent] go")
    assert result.status == "completed"
    assert [name for name, _ in asked] == ["subagent_delegate", "process_execute"]
    assert asked[1][1] == {"command": "touch ran"}
    assert (workspace / "ran").exists() is allow


async def test_the_parents_activity_keeps_the_childs_tool_calls_in_order(workspace: Path) -> None:
    look = {"tool_calls": [{"name": "list_directory", "arguments": {"path": "."}, "id": "l1"}]}
    rules = [
        {"match": "[parent]", "replies": [delegate("[child] look", "looker"), answer("done")]},
        {"match": "[child]", "replies": [look, answer("seen")]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        with anyio.fail_after(30):
            result = await Agent(config(server, workspace)).run("[parent] go")
    kinds = [entry.kind for entry in result.activity]
    assert kinds == ["user", "child-started", "child-tool", "child-ended", "tool", "answer"]
    started, child_tool = result.activity[1], result.activity[2]
    assert child_tool == ActivityEntry(
        kind="child-tool",
        child_id=started.child_id,
        call_id="l1",
        name="list_directory",
        arguments='{"path": "."}',
        text="(empty directory)",
        is_error=False,
    )
