"""`harness acp-agent` driven by the official `acp` SDK's own client connection.

The agent runs as a real child process; the client is `acp.connect_to_agent` over its stdio.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
import anyio
import psutil
import pytest
from acp.connection import StreamEvent
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


@dataclass
class RecordingClient:
    """Records updates; answers permission requests with `allow`."""

    allow: bool = True
    updates: list[Any] = field(default_factory=list[Any])
    permission_kinds: list[str | None] = field(default_factory=list[str | None])

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.permission_kinds.append(tool_call.kind)
        if self.allow:
            option = next(o for o in options if o.kind in ("allow_once", "allow_always"))
            return RequestPermissionResponse(
                outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
            )
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    def text(self) -> str:
        return "".join(
            u.content.text
            for u in self.updates
            if isinstance(u, AgentMessageChunk) and isinstance(u.content, TextContentBlock)
        )


@dataclass
class Agent:
    conn: Any
    process: asyncio.subprocess.Process
    frames: list[dict[str, Any]]


@asynccontextmanager
async def open_acp_agent(
    client: RecordingClient,
    base_url: str,
    *extra: str,
    state_dir: Path | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[Agent]:
    """Starts `python -m harness acp-agent` and connects the SDK's client to it."""
    base = ["--base-url", base_url] if base_url else []
    scratch = tempfile.TemporaryDirectory(prefix="acp-state-")
    state = state_dir if state_dir is not None else Path(scratch.name)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harness",
        "acp-agent",
        *base,
        "--state-dir",
        str(state),
        *extra,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    frames: list[dict[str, Any]] = []

    def observe(event: StreamEvent) -> None:
        frames.append(event.message)

    assert process.stdin is not None
    assert process.stdout is not None
    conn = acp.connect_to_agent(client, process.stdin, process.stdout, observers=[observe])
    try:
        yield Agent(conn, process, frames)
    finally:
        with anyio.CancelScope(shield=True):
            process.stdin.close()
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
            await conn.close()
            scratch.cleanup()


async def _session(agent: Agent, workspace: Path) -> str:
    init = await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
    assert init.protocol_version == acp.PROTOCOL_VERSION
    assert init.agent_info is not None
    assert init.agent_info.name == "harness-acp-agent"
    session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    return session.session_id


async def _prompt(agent: Agent, session_id: str, text: str) -> Any:
    return await agent.conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])


async def test_prompt_streams_text_and_ends_the_turn(scripted_model: Any, workspace: Path) -> None:
    rules = [
        {
            "match": "hello",
            "replies": [{"text": "Hi from the agent.", "chunks": 4, "reasoning": "thinking"}],
        }
    ]
    client = RecordingClient()
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_acp_agent(client, server.base_url) as agent,
        ):
            session_id = await _session(agent, workspace)
            response = await _prompt(agent, session_id, "hello")
            assert response.stop_reason == "end_turn"
            await agent.conn.close()
            agent.process.stdin.close()
            assert await agent.process.wait() == 0
    assert client.text() == "Hi from the agent."
    assert any(isinstance(u, AgentThoughtChunk) for u in client.updates)
    # Chunks the client has not taken yet merge, so a fast stream may arrive in fewer pieces.
    chunks = [u for u in client.updates if isinstance(u, AgentMessageChunk)]
    assert 1 <= len(chunks) <= 4


async def test_a_failed_turn_is_internal_error_without_data(
    scripted_model: Any, workspace: Path
) -> None:
    rules = [{"match": "boom", "replies": [{"status": 500}]}]
    client = RecordingClient()
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_acp_agent(client, server.base_url) as agent,
        ):
            session_id = await _session(agent, workspace)
            with pytest.raises(acp.RequestError) as caught:
                await _prompt(agent, session_id, "boom")
    assert caught.value.code == -32603
    assert str(caught.value) == "Internal error"
    assert caught.value.data is None
    errors = [frame["error"] for frame in agent.frames if "error" in frame]
    assert errors == [{"code": -32603, "message": "Internal error"}]


def _write_proof_rules(answer: str) -> list[dict[str, Any]]:
    """The model asks to write proof.txt with a command, then answers `answer`."""
    command = {"name": "process_execute", "arguments": {"command": "echo yes > proof.txt"}}
    return [{"match": "write proof", "replies": [{"tool_calls": [command]}, {"text": answer}]}]


async def test_tool_calls_are_reported_and_permission_is_asked(
    scripted_model: Any, workspace: Path
) -> None:
    rules = _write_proof_rules("written")
    client = RecordingClient(allow=True)
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_acp_agent(client, server.base_url) as agent,
        ):
            session_id = await _session(agent, workspace)
            response = await _prompt(agent, session_id, "write proof")
    assert response.stop_reason == "end_turn"
    assert client.permission_kinds == ["execute"]
    assert (workspace / "proof.txt").read_text(encoding="utf-8") == "yes\n"
    starts = [u for u in client.updates if isinstance(u, ToolCallStart)]
    ends = [u for u in client.updates if isinstance(u, ToolCallProgress)]
    assert [(s.title, s.kind, s.status) for s in starts] == [
        ("echo yes > proof.txt", "execute", "pending")
    ]
    assert [e.status for e in ends] == ["in_progress", "completed"]


async def test_a_refused_permission_runs_nothing(scripted_model: Any, workspace: Path) -> None:
    rules = _write_proof_rules("could not")
    client = RecordingClient(allow=False)
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_acp_agent(client, server.base_url) as agent,
        ):
            session_id = await _session(agent, workspace)
            response = await _prompt(agent, session_id, "write proof")
    assert response.stop_reason == "end_turn"
    assert client.permission_kinds == ["execute"]
    assert not (workspace / "proof.txt").exists()
    assert client.text() == "could not"


async def test_the_step_limit_is_max_turn_requests(scripted_model: Any, workspace: Path) -> None:
    call = {"tool_calls": [{"name": "list_directory", "arguments": {}}]}
    rules = [{"match": "loop", "replies": [call]}]
    client = RecordingClient()
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_acp_agent(client, server.base_url, "--max-steps", "2") as agent,
        ):
            session_id = await _session(agent, workspace)
            response = await _prompt(agent, session_id, "loop")
    assert response.stop_reason == "max_turn_requests"


async def test_a_length_finish_is_max_tokens(scripted_model: Any, workspace: Path) -> None:
    rules = [{"match": "long", "replies": [{"text": "partial", "finish_reason": "length"}]}]
    client = RecordingClient()
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_acp_agent(client, server.base_url) as agent,
        ):
            session_id = await _session(agent, workspace)
            response = await _prompt(agent, session_id, "long")
    assert response.stop_reason == "max_tokens"
    assert client.text() == "partial"


_LONG_COMMAND = {
    "tool_calls": [
        {
            "name": "process_execute",
            "arguments": {"command": "echo $$ > started; exec sleep 60"},
        }
    ]
}
_DELEGATE = {
    "tool_calls": [
        {
            "name": "subagent_delegate",
            "arguments": {"task": "CHILD-JOB: run the long command", "description": "helper"},
        }
    ]
}


@pytest.mark.parametrize(
    "rules",
    [
        pytest.param(
            [{"match": "long job", "replies": [_LONG_COMMAND, {"text": "never"}]}],
            id="own-command",
        ),
        pytest.param(
            [
                {"match": "CHILD-JOB", "replies": [_LONG_COMMAND, {"text": "never"}]},
                {"match": "long job", "replies": [_DELEGATE, {"text": "never"}]},
            ],
            id="in-process-child-command",
        ),
    ],
)
async def test_session_cancel_reaches_the_running_command(
    rules: list[dict[str, Any]],
    scripted_model: Any,
    workspace: Path,
    wait_for_pid: Any,
    process_gone: Any,
) -> None:
    """session/cancel ends the agent's own running command, or its in-process child's."""
    client = RecordingClient()
    marker = workspace / "started"
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_acp_agent(client, server.base_url, "--no-ask-permission") as agent,
        ):
            session_id = await _session(agent, workspace)
            async with anyio.create_task_group() as tg:
                responses: list[Any] = []

                async def prompt() -> None:
                    responses.append(await _prompt(agent, session_id, "long job"))

                tg.start_soon(prompt)
                pid = await wait_for_pid(marker)
                assert psutil.pid_exists(pid)
                await agent.conn.cancel(session_id=session_id)
    assert [r.stop_reason for r in responses] == ["cancelled"]
    assert process_gone(pid)


async def test_stdin_eof_ends_the_agent_with_exit_0(scripted_model: Any, workspace: Path) -> None:
    client = RecordingClient()
    with anyio.fail_after(60):
        async with scripted_model([]) as server, open_acp_agent(client, server.base_url) as agent:
            await _session(agent, workspace)
            assert agent.process.stdin is not None
            agent.process.stdin.close()
            assert await agent.process.wait() == 0


async def test_sigterm_ends_the_agent_with_exit_0(scripted_model: Any, workspace: Path) -> None:
    client = RecordingClient()
    with anyio.fail_after(60):
        async with scripted_model([]) as server, open_acp_agent(client, server.base_url) as agent:
            await _session(agent, workspace)
            agent.process.send_signal(signal.SIGTERM)
            assert await agent.process.wait() == 0


async def test_a_content_filter_finish_is_refusal(scripted_model: Any, workspace: Path) -> None:
    rules = [{"match": "forbidden", "replies": [{"text": "no", "finish_reason": "content_filter"}]}]
    client = RecordingClient()
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_acp_agent(client, server.base_url) as agent,
        ):
            session_id = await _session(agent, workspace)
            response = await _prompt(agent, session_id, "forbidden")
    assert response.stop_reason == "refusal"


# ---- conversations, sessions that survive the process, modes, auth, rich tool calls ----------


def _user_and_assistant_texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (message["role"], message["content"])
        for message in request["messages"]
        if message["role"] in ("user", "assistant") and message.get("content")
    ]


_CONVERSATION_RULES = [
    {
        "match": "my number is 41",
        "replies": [{"text": "Noted: 41."}, {"text": "41 plus one is 42."}],
    }
]


async def test_a_session_keeps_its_conversation_across_prompts(
    scripted_model: Any, workspace: Path
) -> None:
    client = RecordingClient()
    with anyio.fail_after(60):
        async with (
            scripted_model(_CONVERSATION_RULES) as server,
            open_acp_agent(client, server.base_url) as agent,
        ):
            session_id = await _session(agent, workspace)
            first = await _prompt(agent, session_id, "my number is 41")
            second = await _prompt(agent, session_id, "add one to it")
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    titles = [u.title for u in client.updates if type(u).__name__ == "SessionInfoUpdate"]
    assert titles == ["my number is 41"]
    assert _user_and_assistant_texts(server.requests[-1]) == [
        ("user", "my number is 41"),
        ("assistant", "Noted: 41."),
        ("user", "add one to it"),
    ]


async def test_a_restarted_agent_lists_loads_and_continues_a_session(
    scripted_model: Any, workspace: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    with anyio.fail_after(90):
        async with scripted_model(_CONVERSATION_RULES) as server:
            async with open_acp_agent(RecordingClient(), server.base_url, state_dir=state) as agent:
                session_id = await _session(agent, workspace)
                await _prompt(agent, session_id, "my number is 41")
                agent.process.send_signal(signal.SIGKILL)
                await agent.process.wait()
            client = RecordingClient()
            async with open_acp_agent(client, server.base_url, state_dir=state) as agent:
                init = await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                capabilities = init.agent_capabilities
                assert capabilities is not None
                assert capabilities.load_session is True
                listed = await agent.conn.list_sessions(cwd=str(workspace))
                assert [s.session_id for s in listed.sessions] == [session_id]
                assert listed.sessions[0].title == "my number is 41"
                loaded = await agent.conn.load_session(
                    cwd=str(workspace), session_id=session_id, mcp_servers=[]
                )
                assert loaded.modes is not None
                assert loaded.modes.current_mode_id == "execute"
                replayed = list(client.updates)
                response = await _prompt(agent, session_id, "add one to it")
    assert [type(u).__name__ for u in replayed] == ["UserMessageChunk", "AgentMessageChunk"]
    assert [u.content.text for u in replayed] == ["my number is 41", "Noted: 41."]
    assert response.stop_reason == "end_turn"
    assert client.text().endswith("41 plus one is 42.")
    assert _user_and_assistant_texts(server.requests[-1]) == [
        ("user", "my number is 41"),
        ("assistant", "Noted: 41."),
        ("user", "add one to it"),
    ]


async def test_resume_continues_without_replay(
    scripted_model: Any, workspace: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    with anyio.fail_after(90):
        async with scripted_model(_CONVERSATION_RULES) as server:
            async with open_acp_agent(RecordingClient(), server.base_url, state_dir=state) as agent:
                session_id = await _session(agent, workspace)
                await _prompt(agent, session_id, "my number is 41")
            client = RecordingClient()
            async with open_acp_agent(client, server.base_url, state_dir=state) as agent:
                await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                await agent.conn.resume_session(cwd=str(workspace), session_id=session_id)
                assert client.updates == []
                await _prompt(agent, session_id, "add one to it")
    assert client.text() == "41 plus one is 42."


_FORGED_WRITE = {
    "match": "sneak",
    "replies": [
        {
            "tool_calls": [
                {"name": "process_execute", "arguments": {"command": "echo x > proof.txt"}},
                {"name": "write_file", "arguments": {"path": "forged.txt", "content": "x"}},
            ]
        },
        {"text": "done"},
    ],
}


async def test_ask_mode_refuses_a_forged_command_and_write(
    scripted_model: Any, workspace: Path
) -> None:
    client = RecordingClient(allow=True)
    with anyio.fail_after(60):
        async with (
            scripted_model([_FORGED_WRITE]) as server,
            open_acp_agent(client, server.base_url) as agent,
        ):
            session_id = await _session(agent, workspace)
            await agent.conn.set_session_mode(session_id=session_id, mode_id="ask")
            response = await _prompt(agent, session_id, "sneak")
    assert response.stop_reason == "end_turn"
    assert not (workspace / "proof.txt").exists()
    assert not (workspace / "forged.txt").exists()
    assert client.permission_kinds == []
    modes = [u for u in client.updates if type(u).__name__ == "CurrentModeUpdate"]
    assert [u.current_mode_id for u in modes] == ["ask"]
    ends = [u for u in client.updates if isinstance(u, ToolCallProgress)]
    assert [e.status for e in ends] == ["failed", "failed"]
    tool_results = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 2


async def test_without_a_key_the_agent_starts_and_asks_to_authenticate(
    workspace: Path, tmp_path: Path
) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "DEEPSEEK_MODEL")
    }
    client = RecordingClient()
    with anyio.fail_after(60):
        async with open_acp_agent(client, "", state_dir=tmp_path / "state", env=env) as agent:
            init = await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            assert [m.id for m in init.auth_methods or []] == ["deepseek-api-key"]
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
            with pytest.raises(acp.RequestError) as again:
                await agent.conn.authenticate(method_id="deepseek-api-key")
    assert caught.value.code == -32000
    assert again.value.code == -32000


async def test_a_write_is_an_edit_tool_call_with_a_diff(
    scripted_model: Any, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("old line\n", encoding="utf-8")
    write = {"name": "write_file", "arguments": {"path": "notes.txt", "content": "new line\n"}}
    rules = [{"match": "rewrite", "replies": [{"tool_calls": [write]}, {"text": "ok"}]}]
    client = RecordingClient(allow=True)
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_acp_agent(client, server.base_url) as agent,
        ):
            session_id = await _session(agent, workspace)
            await _prompt(agent, session_id, "rewrite")
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "new line\n"
    (start,) = [u for u in client.updates if isinstance(u, ToolCallStart)]
    assert (start.kind, start.title, start.status) == ("edit", "Write notes.txt", "pending")
    assert [loc.path for loc in start.locations or []] == [str(workspace / "notes.txt")]
    (diff,) = start.content or []
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == (
        "diff",
        str(workspace / "notes.txt"),
        "old line\n",
        "new line\n",
    )
    assert client.permission_kinds == ["edit"]
    ends = [u.status for u in client.updates if isinstance(u, ToolCallProgress)]
    assert ends == ["in_progress", "completed"]


async def test_the_model_is_a_validated_session_config_option(
    scripted_model: Any, workspace: Path
) -> None:
    client = RecordingClient()
    with anyio.fail_after(60):
        async with (
            scripted_model([]) as server,
            open_acp_agent(client, server.base_url, "--model", "m1") as agent,
        ):
            await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
            options = {o.id: o for o in session.config_options or []}
            assert options["model"].current_value == "m1"
            assert options["mode"].current_value == "execute"
            with pytest.raises(acp.RequestError) as caught:
                await agent.conn.set_config_option(
                    config_id="model", session_id=session.session_id, value="no-such-model"
                )
            changed = await agent.conn.set_config_option(
                config_id="mode", session_id=session.session_id, value="ask"
            )
    assert caught.value.code == -32602
    assert {o.id: o.current_value for o in changed.config_options} == {
        "mode": "ask",
        "model": "m1",
    }


async def test_mcp_servers_from_session_new_become_the_models_tools(
    scripted_model: Any, workspace: Path
) -> None:
    from acp.schema import McpServerStdio
    from model_agent.testing import mcp_test_server_command

    command, *args = mcp_test_server_command()
    call = {"name": "my_notes__read_note", "arguments": {"name": "todo"}}
    rules = [{"match": "check notes", "replies": [{"tool_calls": [call]}, {"text": "read"}]}]
    client = RecordingClient()
    with anyio.fail_after(90):
        async with (
            scripted_model(rules) as server,
            open_acp_agent(client, server.base_url) as agent,
        ):
            init = await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            mcp = init.agent_capabilities.mcp_capabilities if init.agent_capabilities else None
            assert mcp is not None
            assert (mcp.http, mcp.sse) == (True, False)
            session = await agent.conn.new_session(
                cwd=str(workspace),
                mcp_servers=[McpServerStdio(name="my notes", command=command, args=args, env=[])],
            )
            response = await _prompt(agent, session.session_id, "check notes")
    assert response.stop_reason == "end_turn"
    offered = [tool["function"]["name"] for tool in server.requests[0]["tools"]]
    assert {"my_notes__read_note", "my_notes__write_marker"} <= set(offered)
    results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert results == ["note todo: all good"]


async def test_a_failed_turn_is_explained_in_the_host_log_file(
    scripted_model: Any, workspace: Path, tmp_path: Path
) -> None:
    rules = [{"match": "boom", "replies": [{"status": 400}]}]
    log = tmp_path / "agent.log"
    client = RecordingClient()
    with anyio.fail_after(60):
        async with (
            scripted_model(rules) as server,
            open_acp_agent(client, server.base_url, "--log-file", str(log)) as agent,
        ):
            session_id = await _session(agent, workspace)
            with pytest.raises(acp.RequestError):
                await _prompt(agent, session_id, "boom")
    text = log.read_text(encoding="utf-8")
    assert f"turn failed in session {session_id}" in text


@pytest.mark.skipif(not os.environ.get("DEEPSEEK_API_KEY"), reason="needs DEEPSEEK_API_KEY")
async def test_keyed_a_second_turn_depends_on_the_first_answer(
    workspace: Path, tmp_path: Path
) -> None:
    """A real model: the second answer can only be right if the first one is in the history."""
    client = RecordingClient()
    with anyio.fail_after(240):
        async with open_acp_agent(client, "", "--mode", "ask", state_dir=tmp_path / "s") as agent:
            session_id = await _session(agent, workspace)
            await _prompt(
                agent,
                session_id,
                "Invent a random code word of exactly 8 uppercase letters. "
                "Reply with only that word and nothing else.",
            )
            first = client.text().strip()
            client.updates.clear()
            await _prompt(
                agent,
                session_id,
                "Reply with exactly the code word you invented in your previous answer, "
                "and nothing else.",
            )
            second = client.text().strip()
    assert len(first) == 8
    assert first.isalpha()
    assert second == first


async def test_a_delegated_child_is_shown_in_its_tool_call(
    scripted_model: Any, workspace: Path
) -> None:
    """The subagent_delegate call carries the child's own tool calls and its text."""
    child_command = {"name": "process_execute", "arguments": {"command": "echo child-ran"}}
    rules = [
        {"match": "CHILD-TASK", "replies": [{"tool_calls": [child_command]}, {"text": "kid done"}]},
        {"match": "delegate it", "replies": [_DELEGATE_KID, {"text": "parent done"}]},
    ]
    client = RecordingClient(allow=True)
    with anyio.fail_after(90):
        async with (
            scripted_model(rules) as server,
            open_acp_agent(client, server.base_url) as agent,
        ):
            session_id = await _session(agent, workspace)
            response = await _prompt(agent, session_id, "delegate it")
    assert response.stop_reason == "end_turn"
    start, child_start = [u for u in client.updates if isinstance(u, ToolCallStart)]
    assert (start.kind, start.title) == ("think", "Subagent: kid")
    # The child's own command is asked about through the same client, as a call of its own.
    assert (child_start.kind, child_start.title, child_start.status) == (
        "execute",
        "echo child-ran",
        "pending",
    )
    child_progress = [
        u.status
        for u in client.updates
        if isinstance(u, ToolCallProgress) and u.tool_call_id == child_start.tool_call_id
    ]
    assert child_progress == ["in_progress", "completed"]
    progress = [
        u
        for u in client.updates
        if isinstance(u, ToolCallProgress) and u.tool_call_id == start.tool_call_id
    ]
    assert progress[-1].status == "completed"
    texts = [
        block.content.text
        for u in progress
        for block in (u.content or [])
        if block.type == "content"
    ]
    assert "Subagent: kid\n- echo child-ran (completed)" in texts
    assert any(text.endswith("kid done") for text in texts)
    assert client.permission_kinds == ["think", "execute"]


_DELEGATE_KID = {
    "tool_calls": [
        {
            "name": "subagent_delegate",
            "arguments": {"task": "CHILD-TASK: run echo", "description": "kid"},
        }
    ]
}


async def test_an_http_mcp_server_from_session_new_is_used(
    scripted_model: Any, workspace: Path
) -> None:
    from acp.schema import HttpMcpServer
    from model_agent.testing import mcp_test_server_command

    call = {"name": "web__read_note", "arguments": {"name": "todo"}}
    rules = [{"match": "check notes", "replies": [{"tool_calls": [call]}, {"text": "read"}]}]
    client = RecordingClient()
    with anyio.fail_after(90):
        async with await anyio.open_process(
            list(mcp_test_server_command(http=True)), start_new_session=True
        ) as mcp:
            try:
                assert mcp.stdout is not None
                url = b""
                while not url.endswith(b"\n"):
                    url += await mcp.stdout.receive(1)
                async with (
                    scripted_model(rules) as server,
                    open_acp_agent(client, server.base_url) as agent,
                ):
                    await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                    session = await agent.conn.new_session(
                        cwd=str(workspace),
                        mcp_servers=[
                            HttpMcpServer(
                                type="http", name="web", url=url.decode().strip(), headers=[]
                            )
                        ],
                    )
                    response = await _prompt(agent, session.session_id, "check notes")
            finally:
                mcp.terminate()
                with anyio.CancelScope(shield=True):
                    await mcp.wait()
    assert response.stop_reason == "end_turn"
    results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert results == ["note todo: all good"]


@dataclass
class HoldingClient(RecordingClient):
    """Never answers a permission request; `asked` fires when one arrives."""

    asked: anyio.Event = field(default_factory=anyio.Event)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.permission_kinds.append(tool_call.kind)
        self.asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_cancel_while_permission_is_pending_ends_the_turn_cancelled(
    scripted_model: Any, workspace: Path
) -> None:
    client = HoldingClient()
    responses: list[Any] = []
    with anyio.fail_after(60):
        async with (
            scripted_model(_write_proof_rules("never")) as server,
            open_acp_agent(client, server.base_url) as agent,
        ):
            session_id = await _session(agent, workspace)
            async with anyio.create_task_group() as tg:

                async def prompt() -> None:
                    responses.append(await _prompt(agent, session_id, "write proof"))

                tg.start_soon(prompt)
                await client.asked.wait()
                await agent.conn.cancel(session_id=session_id)
    assert [r.stop_reason for r in responses] == ["cancelled"]
    assert not (workspace / "proof.txt").exists()
