"""The direct-model agent delegating to an in-process child, and parent cancel reaching it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import psutil
from model_agent import Agent, AgentConfig, AgentEvent, ChildEnded, ChildStarted, ModelEndpoint
from subagent_core import CancelSignal


def _agent(base_url: str, workspace: Path, events: list[AgentEvent]) -> Agent:
    config = AgentConfig(
        endpoint=ModelEndpoint(base_url=base_url), workspace=workspace, mode="execute"
    )
    return Agent(config, observer=events.append)


def _delegate(task: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"name": "subagent_delegate", "arguments": {"task": task, "description": "helper"}}
        ]
    }


async def test_subagent_delegate_runs_an_in_process_child(
    scripted_model: Any, workspace: Path
) -> None:
    rules = [
        {
            "match": "CHILD-WORK",
            "replies": [
                {"tool_calls": [{"name": "process_execute", "arguments": {"command": "echo 7"}}]},
                {"text": "the child saw 7"},
            ],
        },
        {
            "match": "PARENT-WORK",
            "replies": [_delegate("CHILD-WORK: run echo 7"), {"text": "parent: child saw 7"}],
        },
    ]
    events: list[AgentEvent] = []
    with anyio.fail_after(60):
        async with scripted_model(rules) as server:
            result = await _agent(server.base_url, workspace, events).run(
                "PARENT-WORK: delegate", CancelSignal()
            )
    assert result.status == "completed"
    assert result.output == "parent: child saw 7"
    children = [e for e in events if isinstance(e, ChildStarted | ChildEnded)]
    assert [type(e).__name__ for e in children] == ["ChildStarted", "ChildEnded"]
    ended = children[1]
    assert isinstance(ended, ChildEnded)
    assert ended.status == "completed"


async def test_parent_cancel_reaches_the_childs_running_command(
    scripted_model: Any, workspace: Path, wait_for_pid: Any, process_gone: Any
) -> None:
    rules = [
        {
            "match": "CHILD-HANG",
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "process_execute",
                            "arguments": {"command": "echo $$ > started; exec sleep 60"},
                        }
                    ]
                },
                {"text": "never"},
            ],
        },
        {"match": "PARENT-HANG", "replies": [_delegate("CHILD-HANG: run it"), {"text": "never"}]},
    ]
    marker = workspace / "started"
    cancel = CancelSignal()
    events: list[AgentEvent] = []
    with anyio.fail_after(60):
        async with scripted_model(rules) as server, anyio.create_task_group() as tg:
            results: list[Any] = []

            async def parent() -> None:
                agent = _agent(server.base_url, workspace, events)
                results.append(await agent.run("PARENT-HANG: delegate", cancel))

            tg.start_soon(parent)
            pid = await wait_for_pid(marker)
            assert psutil.pid_exists(pid)
            cancel.cancel()
    assert [r.status for r in results] == ["cancelled"]
    assert process_gone(pid)
    ended = [e for e in events if isinstance(e, ChildEnded)]
    assert [e.status for e in ended] in ([], ["cancelled"])
