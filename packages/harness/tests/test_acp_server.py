"""acp-agent pieces without a process: update merging, prompt blocks, MCP server conversion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError
from acp.helpers import embedded_text_resource, image_block, resource_block, text_block
from acp.schema import (
    AgentMessageChunk,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    SseMcpServer,
    ToolCallProgress,
)
from harness._agent_servers.acp_mcp import mcp_servers_from_acp
from harness._agent_servers.acp_server import _prompt_text
from harness._agent_servers.acp_updates import Updates
from model_agent import MCPHTTPServer, MCPStdioServer


class _Recorder:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    async def session_update(self, session_id: str, update: Any) -> None:
        self.sent.append(update)


async def test_waiting_text_chunks_and_progress_of_one_call_merge_in_order() -> None:
    from acp.helpers import update_agent_message_text, update_agent_thought_text

    updates = Updates()
    updates.put(update_agent_message_text("a"))
    updates.put(update_agent_message_text("b"))
    updates.put(update_agent_thought_text("t"))
    updates.put(
        ToolCallProgress(session_update="tool_call_update", tool_call_id="c", status="in_progress")
    )
    updates.put(
        ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id="c",
            content=[{"type": "content", "content": {"type": "text", "text": "out"}}],  # type: ignore[list-item]
        )
    )
    updates.put(update_agent_message_text("c"))
    updates.close()
    recorder = _Recorder()
    with anyio.fail_after(5):
        await updates.pump(recorder, "s")  # type: ignore[arg-type]
        await updates.flush()
    kinds = [type(u).__name__ for u in recorder.sent]
    assert kinds == [
        "AgentMessageChunk",
        "AgentThoughtChunk",
        "ToolCallProgress",
        "AgentMessageChunk",
    ]
    first = recorder.sent[0]
    assert isinstance(first, AgentMessageChunk)
    assert first.content.text == "ab"  # type: ignore[union-attr]
    progress = recorder.sent[2]
    assert progress.status == "in_progress"
    assert progress.content is not None


def test_prompt_text_takes_text_and_text_resources_and_refuses_media() -> None:
    text = _prompt_text(
        [text_block("look at "), resource_block(embedded_text_resource("file:///a.py", "x = 1"))]
    )
    assert text.startswith("look at ")
    assert "x = 1" in text
    with pytest.raises(RequestError) as caught:
        _prompt_text([image_block("AAAA", "image/png")])
    assert caught.value.code == -32602


def test_client_mcp_servers_become_the_agents_with_safe_unique_names(tmp_path: Path) -> None:
    servers = mcp_servers_from_acp(
        [
            McpServerStdio(
                name="my notes!",
                command="cmd",
                args=["--x"],
                env=[EnvVariable(name="K", value="v")],
            ),
            HttpMcpServer(
                type="http",
                name="my notes",
                url="http://127.0.0.1:1/mcp",
                headers=[HttpHeader(name="Authorization", value="Bearer t")],
            ),
        ],
        tmp_path,
    )
    stdio, http = servers
    assert isinstance(stdio, MCPStdioServer)
    assert (stdio.name, stdio.command, stdio.args, dict(stdio.env), stdio.cwd) == (
        "my_notes",
        "cmd",
        ("--x",),
        {"K": "v"},
        tmp_path,
    )
    assert isinstance(http, MCPHTTPServer)
    assert (http.name, dict(http.headers)) == ("my_notes-2", {"Authorization": "Bearer t"})


def test_sse_and_unusable_mcp_servers_are_invalid_params(tmp_path: Path) -> None:
    sse = SseMcpServer(type="sse", name="s", url="http://127.0.0.1:1/sse", headers=[])
    bad_url = HttpMcpServer(type="http", name="h", url="ftp://secret-host", headers=[])
    for server in (sse, bad_url):
        with pytest.raises(RequestError) as caught:
            mcp_servers_from_acp([server], tmp_path)
        assert caught.value.code == -32602
        assert "secret-host" not in str(caught.value.data)


async def test_idle_sessions_past_the_bound_leave_memory_and_reopen_from_the_store(
    tmp_path: Path,
) -> None:
    from harness._agent_servers.acp_server import MAX_OPEN_SESSIONS, HarnessACPAgent
    from harness._agent_servers.conversation_store import SessionStore
    from harness._config.endpoint import ResolvedEndpoint

    store = SessionStore(tmp_path / "state", "acp")
    agent = HarnessACPAgent(
        endpoint=ResolvedEndpoint(base_url="http://127.0.0.1:9/v1", model="m", api_key=None),
        mode="execute",
        ask_permission=False,
        max_steps=5,
        store=store,
    )
    with anyio.fail_after(30):
        ids = [
            (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            for _ in range(MAX_OPEN_SESSIONS + 3)
        ]
        assert len(agent._sessions) == MAX_OPEN_SESSIONS  # pyright: ignore[reportPrivateUsage]
        assert ids[0] not in agent._sessions  # pyright: ignore[reportPrivateUsage]
        await agent.set_session_mode(session_id=ids[0], mode_id="ask")
        stored = await store.load(ids[0])
    assert stored is not None
    assert stored.mode == "ask"
