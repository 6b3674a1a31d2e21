"""The visibility table row by row, and forged or stale calls rejected at call time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from model_agent import Agent, AgentConfig, ModelEndpoint
from model_agent._round import ToolCall
from model_agent._toolset import Toolset
from model_agent.testing import open_scripted_model_server
from model_agent.tools import RequestContext
from subagent_core import CancelSignal

READ = ("read_file", "list_directory", "search_text")
WRITE = ("write_file", "edit_file")
NO_SHELL = ("/nonexistent/bash", "/nonexistent/sh")


def config(workspace: Path, base_url: str = "http://127.0.0.1:9/v1", **options: Any) -> AgentConfig:
    endpoint = ModelEndpoint(base_url=base_url, api_key="k", model="scripted")
    return AgentConfig(endpoint=endpoint, workspace=workspace, **options)


@pytest.mark.parametrize(
    ("options", "tools", "diagnostics"),
    [
        pytest.param({"mode": "ask"}, (*READ, "subagent_delegate"), (), id="model-ask-local"),
        pytest.param(
            {"mode": "execute"},
            (*READ, *WRITE, "process_execute", "subagent_delegate"),
            (),
            id="model-execute-local-shell",
        ),
        pytest.param(
            {"mode": "execute", "shell_candidates": NO_SHELL},
            (*READ, *WRITE, "subagent_delegate"),
            (
                "process_execute is unavailable: no shell found "
                "(looked for /nonexistent/bash, /nonexistent/sh)",
            ),
            id="model-execute-local-no-shell",
        ),
        pytest.param(
            {"mode": "ask", "space": "ssh"},
            (),
            (
                "the ssh execution space has no direct-model backend: workspace, process and "
                "subagent tools are not offered",
            ),
            id="model-ask-ssh",
        ),
        pytest.param(
            {"mode": "execute", "space": "ssh"},
            (),
            (
                "the ssh execution space has no direct-model backend: workspace, process and "
                "subagent tools are not offered",
            ),
            id="model-execute-ssh",
        ),
        pytest.param({"mode": "ask", "runtime": "opencode"}, READ, (), id="opencode-ask"),
        pytest.param(
            {"mode": "execute", "runtime": "continue"}, (*READ, *WRITE), (), id="continue-execute"
        ),
        pytest.param(
            {"mode": "execute", "runtime": "deepseek-harness"},
            (*READ, *WRITE),
            (),
            id="deepseek-harness-execute",
        ),
        pytest.param({"mode": "ask", "depth": 1}, READ, (), id="child-ask"),
        pytest.param(
            {"mode": "execute", "depth": 1},
            (*READ, *WRITE, "process_execute"),
            (),
            id="child-execute",
        ),
        pytest.param(
            {"mode": "execute", "depth": 1, "shell_candidates": NO_SHELL},
            (*READ, *WRITE),
            (
                "process_execute is unavailable: no shell found "
                "(looked for /nonexistent/bash, /nonexistent/sh)",
            ),
            id="child-execute-no-shell",
        ),
        pytest.param(
            {"mode": "execute", "tools": ("read_file", "process_execute")},
            ("read_file", "process_execute"),
            (),
            id="narrowed",
        ),
    ],
)
def test_the_visibility_table(
    workspace: Path, options: dict[str, Any], tools: tuple[str, ...], diagnostics: tuple[str, ...]
) -> None:
    agent = Agent(config(workspace, **options))
    assert agent.tool_names == tools
    assert agent.settings_diagnostics == diagnostics


def test_the_shell_is_found_in_order_and_frozen(workspace: Path) -> None:
    agent = Agent(config(workspace, mode="execute", shell_candidates=("/nonexistent/x", "/bin/sh")))
    assert agent.shell == "/bin/sh"


def context_for(toolset: Toolset, workspace: Path, **changes: Any) -> RequestContext:
    base: dict[str, Any] = {
        "runtime": "model",
        "mode": "ask",
        "space": "local",
        "depth": 0,
        "workspace": workspace,
        "workspace_identity": (0, 0),
        "shell": "/bin/sh",
        "tool_names": toolset.names,
        "cancel": CancelSignal(),
    }
    base.update(changes)
    return RequestContext(**base)


@pytest.mark.parametrize(
    ("options", "changes", "name", "expected"),
    [
        pytest.param(
            {"mode": "ask"},
            {},
            "process_execute",
            "tool call rejected: process_execute is not available in ask mode",
            id="process-in-ask",
        ),
        pytest.param(
            {"mode": "ask"},
            {},
            "write_file",
            "tool call rejected: write_file is not available in ask mode",
            id="write-in-ask",
        ),
        pytest.param(
            {"mode": "execute"},
            {"mode": "ask"},
            "edit_file",
            "tool call rejected: edit_file is not available in ask mode",
            id="stale-execute-snapshot",
        ),
        pytest.param(
            {"mode": "execute"},
            {"state": "terminal"},
            "read_file",
            "tool call rejected: the request has ended",
            id="after-parent-ended",
        ),
        pytest.param(
            {"mode": "execute"},
            {"state": "cancelling"},
            "read_file",
            "tool call rejected: the request is being cancelled",
            id="while-cancelling",
        ),
        pytest.param(
            {"mode": "execute"},
            {"runtime": "opencode"},
            "process_execute",
            "tool call rejected: process_execute is only available to the direct model runtime",
            id="other-runtime-process",
        ),
        pytest.param(
            {"mode": "ask"},
            {"runtime": "continue"},
            "subagent_delegate",
            "tool call rejected: subagent_delegate is only available to the direct model runtime",
            id="other-runtime-delegate",
        ),
        pytest.param(
            {"mode": "execute"},
            {"space": "ssh"},
            "process_execute",
            "tool call rejected: process_execute is not available in the ssh execution space",
            id="ssh",
        ),
        pytest.param(
            {"mode": "ask"},
            {"depth": 1},
            "subagent_delegate",
            "tool call rejected: subagent_delegate is not available to a delegated child "
            "(maximum depth is 1)",
            id="depth",
        ),
        pytest.param(
            {"mode": "execute"},
            {"shell": None},
            "process_execute",
            "tool call rejected: process_execute is not available: no shell was found",
            id="no-shell",
        ),
        pytest.param(
            {"mode": "execute", "tools": ("read_file",)},
            {},
            "write_file",
            "tool call rejected: write_file is not enabled for this request",
            id="outside-snapshot",
        ),
        pytest.param(
            {"mode": "ask"},
            {},
            "rm_rf",
            "tool call rejected: no such tool",
            id="unknown-tool",
        ),
    ],
)
async def test_forged_and_stale_calls_are_rejected(
    workspace: Path, options: dict[str, Any], changes: dict[str, Any], name: str, expected: str
) -> None:
    toolset = Toolset(config(workspace, **options), agent_factory=Agent)
    context = context_for(toolset, workspace, **{"mode": options["mode"], **changes})
    outcome = await toolset.call(
        ToolCall("c", name, '{"path": "x", "content": "y", "command": "true"}'), context
    )
    assert (outcome.content, outcome.is_error) == (expected, True)
    assert not (workspace / "x").exists()


async def test_a_forged_process_call_in_ask_mode_reaches_the_model_as_a_tool_error(
    workspace: Path,
) -> None:
    marker = workspace / "ran"
    script = {
        "rules": [
            {
                "match": "forge",
                "replies": [
                    {
                        "tool_calls": [
                            {
                                "name": "process_execute",
                                "arguments": {"command": f"touch {marker}"},
                            },
                            {"name": "write_file", "arguments": {"path": "w.txt", "content": "x"}},
                        ]
                    },
                    {"text": "ok"},
                ],
            }
        ]
    }
    with anyio.fail_after(30):
        async with open_scripted_model_server(script) as server:
            agent = Agent(config(workspace, server.base_url, mode="ask"))
            result = await agent.run("forge")
            tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert result.status == "completed"
    assert [m["content"] for m in tool_messages] == [
        "tool call rejected: process_execute is not available in ask mode",
        "tool call rejected: write_file is not available in ask mode",
    ]
    assert not marker.exists()
    assert not (workspace / "w.txt").exists()
    assert [entry.is_error for entry in result.activity if entry.kind == "tool"] == [True, True]
