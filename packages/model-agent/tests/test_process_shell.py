"""Shell selection: the platform order, the missing-shell diagnostic, and the frozen shell."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from model_agent._agent import Agent
from model_agent._config import AgentConfig, ModelEndpoint
from model_agent._process_tool import ProcessExecuteTool
from model_agent._shell import (
    POSIX_SHELLS,
    WINDOWS_SHELLS,
    find_shell,
    missing_shell_diagnostic,
    shell_argv,
    shell_candidates,
)
from model_agent._tool import RequestContext
from model_agent.testing import open_scripted_model_server
from subagent_core import CancelSignal

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shells")
MISSING = ("/nonexistent/bash", "/nonexistent/sh")


def test_the_platform_order() -> None:
    assert POSIX_SHELLS == ("/bin/bash", "/bin/sh")
    assert WINDOWS_SHELLS == ("pwsh", "powershell.exe")
    expected = WINDOWS_SHELLS if sys.platform == "win32" else POSIX_SHELLS
    assert shell_candidates() == expected


@posix_only
def test_the_first_existing_shell_wins(tmp_path: Path) -> None:
    not_executable = tmp_path / "plain-file"
    not_executable.write_text("", encoding="utf-8")
    assert find_shell((*MISSING, str(not_executable), "/bin/sh")) == "/bin/sh"
    assert find_shell(("sh",)) == shutil.which("sh")
    default = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    assert find_shell() == default


def test_no_shell_gives_none_and_a_diagnostic_naming_what_was_looked_for() -> None:
    assert find_shell(MISSING) is None
    assert missing_shell_diagnostic(MISSING) == (
        "process_execute is unavailable: no shell found (looked for /nonexistent/bash, "
        "/nonexistent/sh)"
    )


@posix_only
def test_commands_run_through_the_shell_non_interactively() -> None:
    assert shell_argv("/bin/sh", "echo hi") == ["/bin/sh", "-c", "echo hi"]


def agent_config(base_url: str, workspace: Path, **overrides: Any) -> AgentConfig:
    return AgentConfig(
        endpoint=ModelEndpoint(base_url=base_url, api_key="unused", model="scripted"),
        workspace=workspace,
        mode="execute",
        **overrides,
    )


def test_a_missing_shell_leaves_the_tool_unregistered_with_a_settings_diagnostic(
    workspace: Path,
) -> None:
    agent = Agent(agent_config("http://127.0.0.1:9/v1", workspace, shell_candidates=MISSING))
    assert agent.shell is None
    assert "process_execute" not in agent.tool_names
    assert "subagent_delegate" in agent.tool_names
    assert agent.settings_diagnostics == (missing_shell_diagnostic(MISSING),)


async def test_without_a_shell_the_child_has_no_process_tool_either(workspace: Path) -> None:
    delegate = {"name": "subagent_delegate", "arguments": {"task": "[child] x", "description": "d"}}
    rules = [
        {"match": "[parent]", "replies": [{"tool_calls": [delegate]}, {"text": "ok"}]},
        {"match": "[child]", "replies": [{"text": "done"}]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        config = agent_config(server.base_url, workspace, shell_candidates=MISSING)
        with anyio.fail_after(30):
            result = await Agent(config).run("[parent] go")
        child = [body for body in server.requests if "[child]" in json.dumps(body["messages"][:2])]
    assert result.status == "completed"
    names = [tool["function"]["name"] for tool in child[0]["tools"]]
    assert "process_execute" not in names
    assert "subagent_delegate" not in names


@posix_only
async def test_the_result_names_the_shell_frozen_for_the_request(workspace: Path) -> None:
    stat = os.stat(workspace)
    context = RequestContext(
        runtime="model",
        mode="execute",
        space="local",
        depth=0,
        workspace=workspace,
        workspace_identity=(stat.st_dev, stat.st_ino),
        shell="/bin/sh",
        tool_names=("process_execute",),
        cancel=CancelSignal(),
    )
    with anyio.fail_after(30):
        outcome = await ProcessExecuteTool().call({"command": "echo ok"}, context)
    data = json.loads(outcome.content)
    assert (data["status"], data["stdout"], data["shell"]) == ("completed", "ok\n", "/bin/sh")
