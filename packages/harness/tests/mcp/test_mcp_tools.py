"""`harness mcp`'s tools through the official MCP client over real stdio: exact results."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SECRET = "sk-SECRET-mcp-7f3a"
TOOLS = [
    "agents",
    "delegate",
    "delegate_start",
    "delegate_status",
    "delegate_result",
    "delegate_cancel",
    "fanout",
    "sessions",
    "session_close",
]
USAGE = {"inputTokens": 120, "outputTokens": 30, "totalTokens": 150}


def _result(**changes: Any) -> dict[str, Any]:
    """A completed delegate's structured content, `changes` laid over it."""
    return {
        "output": "hello from the fake",
        "structured_output": None,
        "stop_reason": "completed",
        "diagnostic": None,
        "usage": {"input_tokens": 120, "output_tokens": 30, "cached_input_tokens": None},
        "cost": None,
        "session": None,
        "files_changed": None,
        "timed_out": False,
        **changes,
    }


def _text(result: Any) -> str:
    return "".join(block.text for block in result.content)


async def test_the_official_stdio_client_lists_every_tool_and_delegates(root: Any) -> None:
    root.agent("fake", {"text": "hello from the fake", "usage": USAGE})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "harness", "mcp", "-w", str(root.path)],
        env=root.env(),
    )
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert (init.server_info.name, init.capabilities.tools is not None) == (
                "harness",
                True,
            )
            listed = await session.list_tools()
            assert [tool.name for tool in listed.tools] == TOOLS
            for tool in listed.tools:
                assert tool.input_schema["type"] == "object"
                assert tool.output_schema is not None
                assert tool.output_schema["type"] == "object"
            result = await session.call_tool("delegate", {"agent": "fake", "prompt": "hi"})
    assert (result.is_error, _text(result)) == (False, "hello from the fake")
    assert result.structured_content == _result()


async def test_agents_lists_presets_builtins_and_the_configured_with_credential_names(
    root: Any, kit: Any
) -> None:
    root.agent("fake", {"text": "x"})
    env = root.env(GEMINI_API_KEY=SECRET)
    async with kit.open(root, env=env) as server:
        result = await server.session.call_tool("agents", {})
    assert result.is_error is False
    agents = {agent["name"]: agent for agent in result.structured_content["agents"]}
    assert agents["gemini"] == {
        "name": "gemini",
        "kind": "acp",
        "preset": "gemini",
        "configured": False,
        "builtin": False,
        "found": agents["gemini"]["found"],
        "credentials": ["GEMINI_API_KEY"],
        "credentials_set": ["GEMINI_API_KEY"],
        "needs_credential": False,
        "install": agents["gemini"]["install"],
    }
    assert agents["fake"] == {
        "name": "fake",
        "kind": "acp",
        "preset": None,
        "configured": True,
        "builtin": False,
        "found": True,
        "credentials": [],
        "credentials_set": [],
        "needs_credential": False,
        "install": None,
    }
    assert {"acp", "dsh-sdk", "model"} <= {name for name, a in agents.items() if a["builtin"]}
    assert SECRET not in server.traffic()


async def test_a_completed_delegate_carries_answer_usage_and_the_changed_file_count(
    git_root: Any, kit: Any
) -> None:
    root = git_root
    """In a git repository the result counts the files the child changed (never names them)."""
    markers = [{"at": "prompt", "path": "made-by-child.txt", "text": "new"}]
    root.agent("fake", {"text": "hello from the fake", "usage": USAGE, "markers": markers})
    async with kit.open(root) as server:
        result = await server.session.call_tool("delegate", {"agent": "fake", "prompt": "go"})
    assert (result.is_error, _text(result)) == (False, "hello from the fake")
    assert result.structured_content == _result(files_changed=1)
    assert (root.path / "made-by-child.txt").read_text(encoding="utf-8") == "new"


async def test_a_crashing_child_is_an_error_with_exactly_the_safe_diagnostic(
    root: Any, kit: Any
) -> None:
    root.agent(
        "crashy",
        {
            "text": "partial answer",
            "stderr": {"text": f"token={SECRET}\n", "bytes": 8192},
            "crash": {"at": "after_prompt_output", "exit_code": 3},
        },
    )
    async with kit.open(root) as server:
        result = await server.session.call_tool("delegate", {"agent": "crashy", "prompt": "go"})
    diagnostic = (
        "Subagent failure (provider: crashy; stage: process; category: process-exit; exit code: 3)"
    )
    assert result.is_error is True
    assert result.structured_content == _result(
        output="partial answer", stop_reason="error", diagnostic=diagnostic, usage=None
    )
    assert _text(result) == (
        f"subagent run failed\nDiagnostic: {diagnostic}\n"
        "Partial output before the run ended:\npartial answer"
    )
    assert SECRET not in server.traffic()
    assert "token=" not in server.traffic()


async def test_a_child_gets_its_credentials_only_and_no_result_holds_a_secret(
    root: Any, kit: Any
) -> None:
    names = ["MY_SERVICE_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LANG"]
    root.agent("fake", {"echo_env": names})
    env = root.env(
        MY_SERVICE_TOKEN=SECRET + "1",
        OPENAI_API_KEY=SECRET + "2",
        ANTHROPIC_API_KEY=SECRET + "3",
        LANG="C.UTF-8",
    )
    async with kit.open(root, env=env) as server:
        result = await server.session.call_tool("delegate", {"agent": "fake", "prompt": "env"})
        agents = await server.session.call_tool("agents", {})
    assert result.structured_content["output"] == (
        "MY_SERVICE_TOKEN unset\nOPENAI_API_KEY unset\nANTHROPIC_API_KEY unset\nLANG=C.UTF-8\n"
    )
    assert agents.is_error is False
    assert SECRET not in server.traffic()


async def test_an_answer_past_the_bound_is_cut_with_the_marker(root: Any, kit: Any) -> None:
    root.agent("big", {"huge_chunk_bytes": 300_000})
    async with kit.open(root) as server:
        result = await server.session.call_tool("delegate", {"agent": "big", "prompt": "go"})
    output = result.structured_content["output"]
    assert output == "x" * 65536 + "\n[output truncated]"
    assert _text(result) == output
    frame = next(
        line for line in bytes(server.stdout).split(b"\n") if b'"structuredContent"' in line
    )
    assert len(frame) < 3 * 65536


async def test_a_session_continues_across_two_delegate_calls(root: Any, kit: Any) -> None:
    """The second call resumes the kept session in a fresh child, which sees turn 1."""
    state = root.scripts / "fake-state"
    state.mkdir()
    root.agent("fake", {"echo_history": True, "sessions": "resume", "state_dir": str(state)})
    async with kit.open(root) as server:
        call = server.session.call_tool
        first = await call("delegate", {"agent": "fake", "prompt": "one", "session": "s1"})
        second = await call("delegate", {"agent": "fake", "prompt": "two", "session": "s1"})
        listed = await call("sessions", {})
        closed = await call("session_close", {"session": "s1"})
        again = await call("session_close", {"session": "s1"})
        after = await call("sessions", {})
    assert first.structured_content == _result(
        output="seen: one", usage=None, session={"name": "s1", "turn": 1}
    )
    assert second.structured_content == _result(
        output="seen: one | two", usage=None, session={"name": "s1", "turn": 2}
    )
    (session,) = listed.structured_content["sessions"]
    assert session == {
        "name": "s1",
        "agent": "fake",
        "workspace": str(root.path),
        "turns": 2,
        "usage": None,
        "cost": None,
        "last_used": session["last_used"],
    }
    assert (closed.is_error, closed.structured_content) == (
        False,
        {"session": "s1", "closed": True},
    )
    assert (again.is_error, _text(again)) == (True, "harness: no session named s1")
    assert after.structured_content == {"sessions": []}


async def test_a_started_run_is_followed_to_its_result_and_another_is_cancelled(
    root: Any, kit: Any
) -> None:
    gate = root.scripts / "gate"
    root.agent("gated", {"text": "done late", "gate_file": str(gate), "tool_call": True})
    root.agent("hang", {"text": "working", "hang_at": "prompt"})
    async with kit.open(root) as server:
        call = server.session.call_tool
        started = await call("delegate_start", {"agent": "gated", "prompt": "go"})
        run_id = started.structured_content["run_id"]
        assert re.fullmatch(r"run-[0-9a-f]{16}", run_id)
        assert _text(started) == run_id
        with anyio.fail_after(30):  # the child's tool call, sent before it waits at the gate
            status = await call("delegate_status", {"run_id": run_id})
            while status.structured_content["tool_calls"]["total"] == 0:
                await anyio.sleep(0.05)
                status = await call("delegate_status", {"run_id": run_id})
        early = await call("delegate_result", {"run_id": run_id})
        gate.write_text("open", encoding="utf-8")
        late = await call("delegate_result", {"run_id": run_id, "wait_seconds": 60})
        doomed = await call("delegate_start", {"agent": "hang", "prompt": "go"})
        doomed_id = doomed.structured_content["run_id"]
        await kit.settle(lambda: len(kit.fake_children()) == 1, seconds=30)
        cancelled = await call("delegate_cancel", {"run_id": doomed_id})
        assert kit.fake_children() == []
        final = await call("delegate_result", {"run_id": doomed_id})
    assert status.structured_content == {
        "run_id": run_id,
        "state": "running",
        "elapsed_seconds": status.structured_content["elapsed_seconds"],
        "tool_calls": {"total": 1, "by_kind": {"read": 1}},
        "tokens": None,
        "stop_reason": None,
    }
    assert early.is_error is False
    assert early.structured_content == {
        **status.structured_content,
        "elapsed_seconds": early.structured_content["elapsed_seconds"],
        **_result(output="", stop_reason=None, usage=None),
    }
    assert late.is_error is False
    assert late.structured_content == {
        "run_id": run_id,
        "state": "settled",
        "elapsed_seconds": late.structured_content["elapsed_seconds"],
        "tool_calls": {"total": 1, "by_kind": {"read": 1}},
        "tokens": None,
        **_result(output="done late", usage=None),
    }
    assert cancelled.structured_content == {
        "run_id": doomed_id,
        "state": "settled",
        "elapsed_seconds": cancelled.structured_content["elapsed_seconds"],
        "tool_calls": {"total": 0, "by_kind": {}},
        "tokens": None,
        "stop_reason": "aborted",
    }
    assert final.is_error is True
    assert final.structured_content["stop_reason"] == "aborted"
    assert final.structured_content["diagnostic"] is None


async def test_fanout_compares_the_children_and_names_each_patch(git_root: Any, kit: Any) -> None:
    root = git_root
    writes = [{"at": "prompt", "path": "notes.txt", "text": "one line\n"}]
    root.agent("writer", {"text": "wrote it", "markers": writes, "usage": USAGE})
    root.agent("reader", {"text": "read it"})
    async with kit.open(root) as server:
        result = await server.session.call_tool(
            "fanout",
            {"agents": ["writer", "reader"], "prompt": "add notes", "verify": "test -f notes.txt"},
        )
    assert result.is_error is False
    content = result.structured_content
    writer, reader = content["children"]
    assert (content["isolation"], content["completed"], content["total"]) == ("worktree", 2, 2)
    patch = writer["patch"]
    assert patch is not None
    assert Path(patch).name == "1-writer.patch"
    assert Path(patch).is_relative_to(root.state)
    assert "notes.txt" in await anyio.Path(patch).read_text(encoding="utf-8")
    assert writer == {
        "number": 1,
        "agent": "writer",
        "stop_reason": "completed",
        "output": "wrote it",
        "diagnostic": None,
        "timed_out": False,
        "wall_seconds": writer["wall_seconds"],
        "usage": {"input_tokens": 120, "output_tokens": 30, "cached_input_tokens": None},
        "cost": None,
        "files_changed": 1,
        "lines_added": 1,
        "lines_deleted": 0,
        "patch": patch,
        "verify": "pass",
        "rank": 1,
    }
    assert reader == {
        **writer,
        "number": 2,
        "agent": "reader",
        "output": "read it",
        "wall_seconds": reader["wall_seconds"],
        "usage": None,
        "files_changed": 0,
        "lines_added": 0,
        "patch": None,
        "verify": "fail (exit 1)",
        "rank": 2,
    }
    assert not (root.path / "notes.txt").exists()
    assert _text(result).splitlines()[1] == (
        f"#2 reader: completed, {reader['wall_seconds']:.1f} s, 0 files +0 -0, verify fail (exit 1)"
    )


async def test_refused_calls_are_tool_errors_and_start_nothing(root: Any, kit: Any) -> None:
    marker = root.scripts / "started"
    root.agent("fake", {"text": "x", "markers": [{"at": "start", "path": str(marker)}]})
    outside = root.path.parent / "elsewhere"
    outside.mkdir()
    (root.path / "escape").symlink_to(outside)
    bad: list[tuple[str, dict[str, Any], str]] = [
        ("delegate", {"prompt": "x"}, "delegate: agent is required"),
        ("delegate", {"agent": 7, "prompt": "x"}, "delegate: agent must be a non-empty string"),
        (
            "delegate",
            {"agent": "fake", "prompt": ""},
            "delegate: prompt must be a non-empty string",
        ),
        (
            "delegate",
            {"agent": "fake", "prompt": "x", "colour": 1},
            'delegate takes no argument "colour"',
        ),
        (
            "delegate",
            {"agent": "fake", "prompt": "x", "timeout_seconds": -1},
            "delegate: timeout_seconds must be greater than 0",
        ),
        (
            "delegate",
            {"agent": "fake", "prompt": "x", "budget_tokens": 1.5},
            "delegate: budget_tokens must be a whole number of at least 1",
        ),
        (
            "delegate",
            {"agent": "fake", "prompt": "x", "session": "no spaces"},
            "delegate: session takes 1-64 letters, digits, '.', '_' or '-', starting with one of the first two",
        ),
        (
            "delegate",
            {"agent": "fake", "prompt": "x", "workspace": "/"},
            "workspace is outside the server's root (harness mcp --workspace)",
        ),
        (
            "delegate",
            {"agent": "fake", "prompt": "x", "workspace": "../elsewhere"},
            "workspace is outside the server's root (harness mcp --workspace)",
        ),
        (
            "delegate",
            {"agent": "fake", "prompt": "x", "workspace": "escape"},
            "workspace is outside the server's root (harness mcp --workspace)",
        ),
        (
            "delegate",
            {"agent": "fake", "prompt": "x", "workspace": "missing"},
            "workspace is not a directory inside the server's root",
        ),
        (
            "delegate",
            {"agent": "fake", "prompt": "x", "output_schema": {"type": "object"}},
            'agent "fake" does not support output_schema',
        ),
        (
            "delegate_start",
            {"agent": "fake", "prompt": "x", "workspace": "/tmp"},
            "workspace is outside the server's root (harness mcp --workspace)",
        ),
        (
            "delegate_status",
            {"run_id": "run-0123456789abcdef"},
            "no run run-0123456789abcdef on this server (it may have been forgotten)",
        ),
        (
            "delegate_result",
            {"run_id": "nope"},
            "delegate_result: run_id is not a run id from delegate_start",
        ),
        (
            "fanout",
            {"agents": [], "prompt": "x"},
            "fanout: agents must be a non-empty list of names",
        ),
        (
            "fanout",
            {"agents": ["fake"], "prompt": "x", "isolation": "chroot"},
            "fanout: isolation must be one of worktree, copy, none",
        ),
        (
            "fanout",
            {"agents": ["fake"], "prompt": "x"},
            "fanout: worktree isolation needs a git repository; outside one use isolation copy",
        ),
        ("sessions", {"all": True}, 'sessions takes no argument "all"'),
        ("no_such_tool", {}, 'there is no tool named "no_such_tool"'),
    ]
    async with kit.open(root) as server:
        for tool, arguments, message in bad:
            result = await server.session.call_tool(tool, arguments)
            assert (tool, result.is_error, _text(result)) == (tool, True, f"harness: {message}")
            assert result.structured_content is None
        unknown = await server.session.call_tool("delegate", {"agent": "nope", "prompt": "x"})
    assert unknown.is_error is True
    assert _text(unknown).startswith('harness: no provider or agent named "nope" (configured: ')
    assert not marker.exists()
    assert kit.fake_children() == []


async def test_every_stdout_line_is_a_frame_and_stderr_stays_empty(root: Any, kit: Any) -> None:
    root.agent("fake", {"text": "hi", "thought": "thinking", "tool_call": True})
    async with kit.open(root) as server:
        await server.session.call_tool("delegate", {"agent": "fake", "prompt": "go"})
    lines = bytes(server.stdout).split(b"\n")
    assert lines[-1] == b""
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in lines[:-1])
    assert bytes(server.stderr) == b""
    assert server.process.returncode == 0


async def test_timeout_seconds_stops_the_child_and_says_so(root: Any, kit: Any) -> None:
    root.agent("hang", {"text": "working", "hang_at": "prompt"})
    async with kit.open(root) as server:
        result = await server.session.call_tool(
            "delegate", {"agent": "hang", "prompt": "go", "timeout_seconds": 1}
        )
    assert result.is_error is True
    assert result.structured_content == _result(
        output="working", stop_reason="aborted", usage=None, timed_out=True
    )
    assert _text(result) == (
        "subagent run was cancelled\nPartial output before the run ended:\nworking"
        "\n(the call's timeout_seconds stopped it)"
    )
    assert kit.fake_children() == []


async def test_approve_is_every_childs_permission(root: Any, kit: Any) -> None:
    """`reads` (the default) allows a read and refuses an edit; `all` allows the edit; an agent
    without a permission setting is refused unless `all`."""
    asks = [{"tool_kind": "read"}, {"tool_kind": "edit"}]
    root.agent("asker", {"text": "", "permission": asks})
    (root.path / "harness.toml").write_text(
        (root.path / "harness.toml").read_text(encoding="utf-8")
        + '\n[providers.sdk-fake]\nkind = "sdk"\n'
        + f'command = "{sys.executable}"\nargs = ["-m", "subagent_sdk.testing"]\n',
        encoding="utf-8",
    )
    arguments = {"agent": "asker", "prompt": "go"}
    async with kit.open(root) as server:
        reads = await server.session.call_tool("delegate", arguments)
        sdk = await server.session.call_tool("delegate", {"agent": "sdk-fake", "prompt": "go"})
    async with kit.open(root, "--approve", "all") as server:
        everything = await server.session.call_tool("delegate", arguments)
    assert (reads.is_error, reads.structured_content) == (
        False,
        _result(
            output="[permission selected allow][permission cancelled]",
            usage=None,
            diagnostic="ACP permission (policy: reject; tool kind: edit; decision: cancelled)",
        ),
    )
    assert everything.structured_content == _result(
        output="[permission selected allow][permission selected allow]", usage=None
    )
    assert (sdk.is_error, _text(sdk)) == (
        True,
        'harness: agent "sdk-fake" has no permission setting to hold it to --approve reads; '
        "serve with --approve all to use it",
    )
