"""MCP tools through real Agents: the shipped stdio MCP test server, the scripted model server.

Each test starts real server processes; the autouse leak guard fails a test that leaves any of
them (or a `setsid` grandchild) alive after the run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from model_agent import (
    Agent,
    AgentConfig,
    AgentEvent,
    AgentResult,
    ChildEvent,
    ChildStarted,
    MCPHTTPServer,
    MCPServer,
    MCPStdioServer,
    ModelEndpoint,
    ToolEnded,
    ToolStarted,
)
from model_agent.testing import (
    MCPTestServerBehaviour,
    ScriptedModelServer,
    mcp_test_server_command,
    open_scripted_model_server,
)
from model_agent.tools import Mode
from subagent_core import CancelSignal
from subagent_core.kit import LineReader, open_managed_process

READ = "notes__read_note"
WRITE = "notes__write_marker"
TIMEOUT_SECONDS = 60


def notes_server(
    behaviour: MCPTestServerBehaviour = "normal",
    *,
    pid_file: Path | None = None,
    call_timeout_seconds: float = 120.0,
    name: str = "notes",
) -> MCPStdioServer:
    command, *args = mcp_test_server_command(behaviour, pid_file=pid_file)
    return MCPStdioServer(
        name=name, command=command, args=tuple(args), call_timeout_seconds=call_timeout_seconds
    )


def config(
    server: ScriptedModelServer,
    workspace: Path,
    mcp: Sequence[MCPServer],
    *,
    mode: Mode = "execute",
    **overrides: Any,
) -> AgentConfig:
    return AgentConfig(
        endpoint=ModelEndpoint(base_url=server.base_url, api_key="unused", model="scripted"),
        workspace=workspace,
        mode=mode,
        mcp_servers=tuple(mcp),
        **overrides,
    )


def calls(*entries: tuple[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": dict(args)} for name, args in entries]}


def answer(text: str) -> dict[str, Any]:
    return {"text": text}


def offered(body: Mapping[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def schema_of(body: Mapping[str, Any], name: str) -> dict[str, Any]:
    (tool,) = [tool for tool in body["tools"] if tool["function"]["name"] == name]
    return tool["function"]


def tool_messages(body: Mapping[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m.get("role") == "tool"]


def requests_of(server: ScriptedModelServer, marker: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for body in server.requests:
        users = [m for m in body["messages"] if m.get("role") == "user"]
        if users and marker in str(users[0].get("content")):
            out.append(body)
    return out


async def run_agent(
    script: list[dict[str, Any]], workspace: Path, mcp: Sequence[MCPStdioServer], **options: Any
) -> tuple[AgentResult, ScriptedModelServer]:
    async with open_scripted_model_server({"rules": script}) as server:
        with anyio.fail_after(TIMEOUT_SECONDS):
            result = await Agent(config(server, workspace, mcp, **options)).run("[parent] go")
    return result, server


async def test_tools_are_offered_namespaced_and_a_result_reaches_the_next_request(
    workspace: Path,
) -> None:
    script = [
        {
            "match": "[parent]",
            "replies": [calls((READ, {"name": "alpha"})), answer("done")],
        }
    ]
    result, server = await run_agent(script, workspace, [notes_server()])
    assert (result.status, result.output) == ("completed", "done")
    first, second = server.requests
    assert offered(first)[-2:] == [READ, WRITE]
    read = schema_of(first, READ)
    assert read["description"] == "Read the note called `name` (read-only)."
    assert read["parameters"]["properties"] == {"name": {"title": "Name", "type": "string"}}
    assert read["parameters"]["required"] == ["name"]
    assert tool_messages(second) == ["note alpha: all good"]


async def test_execute_asks_approval_for_the_writing_tool_only(workspace: Path) -> None:
    marker = workspace / "marker.txt"
    asked: list[tuple[str, dict[str, Any]]] = []

    async def approve(name: str, arguments: Mapping[str, Any]) -> bool:
        asked.append((name, dict(arguments)))
        return True

    write = {"path": str(marker), "text": "hello"}
    script = [
        {
            "match": "[parent]",
            "replies": [calls((READ, {"name": "a"}), (WRITE, write)), answer("done")],
        }
    ]
    result, server = await run_agent(script, workspace, [notes_server()], approve=approve)
    assert result.status == "completed"
    assert asked == [(WRITE, write)]
    assert tool_messages(server.requests[-1]) == ["note a: all good", "wrote 5 characters"]
    assert marker.read_text(encoding="utf-8") == "hello"


async def test_a_declined_write_never_reaches_the_server(workspace: Path) -> None:
    marker = workspace / "marker.txt"

    async def decline(name: str, arguments: Mapping[str, Any]) -> bool:
        return False

    script = [
        {
            "match": "[parent]",
            "replies": [calls((WRITE, {"path": str(marker), "text": "x"})), answer("done")],
        }
    ]
    result, server = await run_agent(script, workspace, [notes_server()], approve=decline)
    assert result.status == "completed"
    assert tool_messages(server.requests[-1]) == ["the user declined this action"]
    assert not marker.exists()


async def test_ask_offers_only_read_only_tools_and_refuses_a_forged_write(workspace: Path) -> None:
    marker = workspace / "marker.txt"
    script = [
        {
            "match": "[parent]",
            "replies": [
                calls((WRITE, {"path": str(marker), "text": "x"}), (READ, {"name": "b"})),
                answer("done"),
            ],
        }
    ]
    result, server = await run_agent(script, workspace, [notes_server()], mode="ask")
    assert result.status == "completed"
    first, second = server.requests
    assert READ in offered(first)
    assert WRITE not in offered(first)
    assert tool_messages(second) == ["tool call rejected: no such tool", "note b: all good"]
    assert not marker.exists()


async def test_a_filtered_child_sees_only_the_allowed_tool_and_shares_the_parents_server(
    workspace: Path, process_leak_guard: list[int]
) -> None:
    marker = workspace / "marker.txt"
    delegate = {"task": "[child] read alpha", "description": "reader", "tools": [READ]}
    script = [
        {
            "match": "[parent]",
            "replies": [calls(("subagent_delegate", delegate)), answer("done")],
        },
        {
            "match": "[child]",
            "replies": [
                calls((READ, {"name": "alpha"}), (WRITE, {"path": str(marker), "text": "x"})),
                answer("child read it"),
            ],
        },
    ]
    events: list[AgentEvent] = []
    async with open_scripted_model_server({"rules": script}) as server:
        agent = Agent(config(server, workspace, [notes_server()]), observer=events.append)
        with anyio.fail_after(TIMEOUT_SECONDS):
            result = await agent.run("[parent] go")
    assert (result.status, result.output) == ("completed", "done")
    # The child's MCP calls reach the parent's observer, attributed to the child.
    (started,) = [event for event in events if isinstance(event, ChildStarted)]
    child_results = [
        (event.child_id, event.event.name, event.event.content)
        for event in events
        if isinstance(event, ChildEvent) and isinstance(event.event, ToolEnded)
    ]
    assert child_results == [
        (started.child_id, READ, "note alpha: all good"),
        (started.child_id, WRITE, "tool call rejected: no such tool"),
    ]
    child_first, child_second = requests_of(server, "[child]")
    assert offered(child_first) == [READ]
    assert tool_messages(child_second) == [
        "note alpha: all good",
        "tool call rejected: no such tool",
    ]
    assert json.loads(tool_messages(server.requests[-1])[0])["output"] == "child read it"
    assert not marker.exists()
    # One server for parent and child: the child shares the parent's session.
    assert len(process_leak_guard) == 1


async def test_a_child_of_an_ask_parent_gets_no_writing_tool_even_when_it_names_it(
    workspace: Path,
) -> None:
    delegate = {"task": "[child] write", "description": "writer", "tools": [WRITE]}
    script = [
        {
            "match": "[parent]",
            "replies": [calls(("subagent_delegate", delegate)), answer("done")],
        },
        {"match": "[child]", "replies": [answer("nothing to do")]},
    ]
    result, server = await run_agent(script, workspace, [notes_server()], mode="ask")
    assert result.status == "completed"
    assert requests_of(server, "[child]") == []
    error = json.loads(tool_messages(server.requests[-1])[0])["error"]
    assert error == "invalid arguments: `tools` may only name tools this request has"


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        ("hang", "MCP tool call failed: server notes did not answer within 2 s"),
        ("crash", "MCP tool call failed: the connection to server notes is closed"),
        ("flood", "MCP tool call failed: server notes sent a message over the size limit"),
        ("grandchild", "MCP tool call failed: server notes did not answer within 2 s"),
    ],
)
async def test_a_hostile_server_fails_the_call_with_fixed_text_and_leaves_nothing(
    workspace: Path, tmp_path: Path, behaviour: MCPTestServerBehaviour, expected: str
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    server_config = notes_server(behaviour, pid_file=pid_file, call_timeout_seconds=2)
    script = [
        {
            "match": "[parent]",
            "replies": [calls((READ, {"name": "a"}), (READ, {"name": "b"})), answer("done")],
        }
    ]
    result, server = await run_agent(script, workspace, [server_config])
    assert (result.status, result.output) == ("completed", "done")
    first, second = tool_messages(server.requests[-1])
    assert first == expected
    assert second.startswith("MCP tool call failed: ")
    if behaviour == "grandchild":
        pid = int(pid_file.read_text(encoding="utf-8"))
        assert not _alive(pid)


async def test_a_server_that_cannot_start_leaves_its_tools_out_and_the_run_goes_on(
    workspace: Path,
) -> None:
    missing = MCPStdioServer(name="gone", command=str(workspace / "no-such-server"))
    script = [{"match": "[parent]", "replies": [answer("done")]}]
    result, server = await run_agent(script, workspace, [missing, notes_server()])
    assert result.status == "completed"
    names = offered(server.requests[0])
    assert READ in names
    assert not [name for name in names if name.startswith("gone__")]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_server_names_and_settings_are_validated_with_fixed_text() -> None:
    with pytest.raises(ValueError, match="MCP server name"):
        MCPStdioServer(name="a__b", command="x")
    with pytest.raises(ValueError, match="MCP server name"):
        MCPHTTPServer(name="", url="https://example.test/mcp")
    with pytest.raises(ValueError, match="http:// or https://"):
        MCPHTTPServer(name="web", url="file:///etc/passwd")
    with pytest.raises(ValueError, match="single-line values"):
        MCPHTTPServer(name="web", url="https://example.test/mcp", headers={"X": "a\r\nb"})
    with pytest.raises(ValueError, match=r"^MCPStdioServer\.env names"):
        MCPStdioServer(name="s", command="x", env={"A=B": "secret-value"})
    with pytest.raises(ValueError, match="timeouts must be positive"):
        MCPStdioServer(name="s", command="x", call_timeout_seconds=0)
    endpoint = ModelEndpoint(base_url="http://127.0.0.1:9", api_key="k")
    twice = (MCPStdioServer(name="s", command="x"), MCPStdioServer(name="s", command="y"))
    with pytest.raises(ValueError, match="two MCP servers share a name"):
        AgentConfig(endpoint=endpoint, workspace=Path(os.getcwd()), mcp_servers=twice)


async def test_a_streamable_http_server_offers_its_tools_and_answers_calls(
    workspace: Path,
) -> None:
    command, *args = mcp_test_server_command(http=True)
    script = [
        {
            "match": "[parent]",
            "replies": [calls(("web__read_note", {"name": "remote"})), answer("done")],
        }
    ]
    with anyio.fail_after(TIMEOUT_SECONDS):
        async with open_managed_process(
            [command, *args], stderr="devnull", eof_grace_seconds=0.1
        ) as process:
            assert process.stdout is not None
            url = (await LineReader(process.stdout).receive_line()).decode()
            web = MCPHTTPServer(name="web", url=url, headers={"Authorization": "Bearer t"})
            async with open_scripted_model_server({"rules": script}) as server:
                agent = Agent(config(server, workspace, [web]))
                result = await agent.run("[parent] go")
    assert (result.status, result.output) == ("completed", "done")
    first, second = server.requests
    assert offered(first)[-2:] == ["web__read_note", "web__write_marker"]
    assert tool_messages(second) == ["note remote: all good"]


async def test_a_parent_cancel_ends_a_hung_call_at_once_and_stops_the_server(
    workspace: Path,
) -> None:
    cancel = CancelSignal()
    started = anyio.Event()
    result: AgentResult | None = None
    script = [
        {
            "match": "[parent]",
            "replies": [calls((READ, {"name": "a"})), answer("never")],
        }
    ]

    def observe(event: object) -> None:
        if isinstance(event, ToolStarted):
            started.set()

    async with open_scripted_model_server({"rules": script}) as server:
        agent = Agent(config(server, workspace, [notes_server("hang")]), observer=observe)
        with anyio.fail_after(TIMEOUT_SECONDS):
            async with anyio.create_task_group() as group:

                async def cancel_once_started() -> None:
                    await started.wait()
                    cancel.cancel()

                group.start_soon(cancel_once_started)
                result = await agent.run("[parent] go", cancel)
    assert result is not None
    assert result.status == "cancelled"
    (entry,) = [entry for entry in result.activity if entry.kind == "tool"]
    assert entry.text == "tool call was cancelled"


async def test_each_run_lists_the_tools_anew_and_a_crash_does_not_outlive_its_run(
    workspace: Path, process_leak_guard: list[int]
) -> None:
    script = [
        {
            "match": "[parent]",
            "replies": [calls((READ, {"name": "a"})), answer("first"), answer("second")],
        }
    ]
    async with open_scripted_model_server({"rules": script}) as server:
        agent = Agent(config(server, workspace, [notes_server("crash")]))
        with anyio.fail_after(TIMEOUT_SECONDS):
            first = await agent.run("[parent] go")
            second = await agent.run("[parent] again")
    assert (first.status, second.status) == ("completed", "completed")
    # The crashed server was not reused: the second run started (and listed) a new one.
    assert len(process_leak_guard) == 2
    assert READ in offered(server.requests[-1])


async def test_an_http_server_dying_mid_call_fails_the_call_not_the_run(workspace: Path) -> None:
    command, *args = mcp_test_server_command("crash", http=True)
    script = [
        {
            "match": "[parent]",
            "replies": [
                calls(("web__read_note", {"name": "a"}), ("web__read_note", {"name": "b"})),
                answer("done"),
            ],
        }
    ]
    with anyio.fail_after(TIMEOUT_SECONDS):
        async with open_managed_process(
            [command, *args], stderr="devnull", eof_grace_seconds=0.1
        ) as process:
            assert process.stdout is not None
            url = (await LineReader(process.stdout).receive_line()).decode()
            web = MCPHTTPServer(name="web", url=url)
            async with open_scripted_model_server({"rules": script}) as server:
                result = await Agent(config(server, workspace, [web])).run("[parent] go")
    assert (result.status, result.output) == ("completed", "done")
    closed = "MCP tool call failed: the connection to server web is closed"
    assert tool_messages(server.requests[-1]) == [closed, closed]


async def test_a_server_silent_at_start_is_left_out_after_its_connect_timeout(
    workspace: Path,
) -> None:
    command, *args = mcp_test_server_command("silent")
    silent = MCPStdioServer(
        name="mute", command=command, args=tuple(args), connect_timeout_seconds=1
    )
    script = [{"match": "[parent]", "replies": [answer("done")]}]
    result, server = await run_agent(script, workspace, [silent, notes_server()])
    assert result.status == "completed"
    names = offered(server.requests[0])
    assert READ in names
    assert not [name for name in names if name.startswith("mute__")]


@pytest.mark.parametrize("ask_child", [False, True])
async def test_a_childs_writing_mcp_call_is_covered_by_the_delegate_approval_or_asked(
    workspace: Path, ask_child: bool
) -> None:
    marker = workspace / "marker.txt"
    asked: list[str] = []

    async def approve(name: str, arguments: Mapping[str, Any]) -> bool:
        asked.append(name)
        return True

    delegate = {"task": "[child] write it", "description": "writer"}
    script = [
        {"match": "[parent]", "replies": [calls(("subagent_delegate", delegate)), answer("done")]},
        {
            "match": "[child]",
            "replies": [calls((WRITE, {"path": str(marker), "text": "x"})), answer("wrote")],
        },
    ]
    result, _ = await run_agent(
        script, workspace, [notes_server()], approve=approve, approve_child_actions=ask_child
    )
    assert result.status == "completed"
    assert asked == (["subagent_delegate", WRITE] if ask_child else ["subagent_delegate"])
    assert marker.read_text(encoding="utf-8") == "x"


async def test_lines_that_are_not_json_rpc_are_skipped(workspace: Path) -> None:
    script = [{"match": "[parent]", "replies": [calls((READ, {"name": "n"})), answer("done")]}]
    result, server = await run_agent(script, workspace, [notes_server("noisy")])
    assert result.status == "completed"
    assert tool_messages(server.requests[-1]) == ["note n: all good"]
