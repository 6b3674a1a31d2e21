"""The installed `harness` console script, run as a user runs it: exit codes, pipes, a pty.

Every case starts the real script in a subprocess (stdout a pipe, so "not a terminal"), except
the approval prompt, which runs on a pseudo-terminal.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from harness._version import installed_version
from model_agent.testing import open_scripted_model_server
from subagent_acp.testing import script_env

SCRIPT = Path(sys.executable).with_name("harness")
COMMANDS = [
    "demo",
    "run",
    "delegate",
    "acp-agent",
    "sdk-runtime",
    "fake-acp-child",
    "fake-sdk-runtime",
    "fake-model",
    "e2e",
    "providers",
]
GRACES = (
    "dispose_eof_grace_seconds = 0.5\ndispose_grace_seconds = 0.5\n"
    "dispose_kill_grace_seconds = 1.0\n"
)


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEEPSEEK_")}
    env.update(extra or {})
    return env


async def _harness(
    args: list[str], *, stdin: bytes = b"", env: Mapping[str, str] | None = None
) -> tuple[int, str, str]:
    assert SCRIPT.is_file(), "the harness console script is installed beside the interpreter"
    with anyio.fail_after(90):
        done = await anyio.run_process(
            [str(SCRIPT), *args], input=stdin, check=False, env=_env(env)
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _fake_provider(workspace: Path, name: str, script: Mapping[str, Any], **extra: str) -> Path:
    """A harness.toml with one ACP provider: the scripted fake child with `script`."""
    env = {**script_env(script), **extra}
    env_toml = ", ".join(f"{key} = {json.dumps(value)}" for key, value in env.items())
    path = workspace / "harness.toml"
    path.write_text(
        f'[providers.{name}]\nkind = "acp"\ncommand = {json.dumps(sys.executable)}\n'
        f'args = ["-m", "harness", "fake-acp-child"]\nenv = {{ {env_toml} }}\n{GRACES}',
        encoding="utf-8",
    )
    return path


# -- conventions -------------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS)])
async def test_version_everywhere(command: list[str]) -> None:
    code, out, _ = await _harness([*command, "--version"])
    assert (code, out) == (0, f"harness {installed_version()}\n")


@pytest.mark.parametrize("command", COMMANDS)
async def test_every_help_exits_0_and_names_itself(command: str) -> None:
    code, out, err = await _harness([command, "--help"])
    assert code == 0, err
    assert out.startswith(f"Usage: harness {command} ")


async def test_a_bad_choice_is_one_plain_line_and_exit_2() -> None:
    code, out, err = await _harness(["run", "--mode", "yolo", "hi"])
    assert code == 2
    assert out == ""
    assert err.splitlines()[0] == (
        "harness: Invalid value for '--mode': 'yolo' is not one of 'ask', 'execute'."
    )


# -- acp-agent: requests written before EOF ----------------------------------------------


async def test_acp_agent_answers_every_request_read_before_stdin_ends(tmp_path: Path) -> None:
    """A client that writes its requests and closes stdin still gets every response."""
    requests: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}},
    ]
    lines = "".join(json.dumps(request) + "\n" for request in requests).encode()
    code, out, _ = await _harness(
        ["acp-agent", "--state-dir", str(tmp_path / "state")], stdin=lines
    )
    responses = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [response["id"] for response in responses] == [0, 1]
    assert responses[0]["result"]["agentInfo"]["name"] == "harness-acp-agent"
    assert responses[1]["result"] == {"sessions": []}


# -- run: safe reasons and exit codes ----------------------------------------------------


async def test_run_prints_the_safe_reason_of_an_http_500(tmp_path: Path) -> None:
    rules = {"rules": [{"match": "boom", "replies": [{"status": 500, "body": "SECRET-500"}]}]}
    async with open_scripted_model_server(rules) as server:
        code, out, err = await _harness(
            ["run", "-w", str(tmp_path), "--base-url", server.base_url, "boom"]
        )
    assert code == 1
    assert out == ""
    assert err.splitlines()[-1] == (
        "harness: the run did not complete: model request failed (http-500)"
    )
    assert "SECRET-500" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-w", "/nonexistent/harness-ws"], "harness: the workspace is not accessible: "),
        (["--base-url", "not-a-url"], "harness: the base URL must be an http:// or https://"),
    ],
)
async def test_usage_errors_of_run_are_exit_2(args: list[str], message: str) -> None:
    code, out, err = await _harness(["run", *args, "hi"], env={"DEEPSEEK_API_KEY": "k"})
    assert code == 2
    assert out == ""
    assert err.startswith(message)
    assert err.count("\n") == 1


async def test_run_reads_the_prompt_from_stdin(tmp_path: Path) -> None:
    rules = {"rules": [{"match": "from stdin", "replies": [{"text": "stdin seen"}]}]}
    async with open_scripted_model_server(rules) as server:
        code, out, _ = await _harness(
            ["run", "-w", str(tmp_path), "--base-url", server.base_url, "-"],
            stdin=b"a prompt from stdin\n",
        )
    assert (code, out) == (0, "stdin seen\n")


async def test_an_empty_stdin_prompt_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = await _harness(
        ["run", "-w", str(tmp_path), "--base-url", "http://127.0.0.1:9", "-"], stdin=b""
    )
    assert code == 2
    assert err == "harness: the prompt is empty (nothing on stdin)\n"


# -- delegate: --json, --timeout, stdin --------------------------------------------------


async def test_delegate_json_is_ndjson_ending_in_the_result(tmp_path: Path) -> None:
    _fake_provider(tmp_path, "fake", {"text": "hello from the fake", "chunks": 2})
    code, out, err = await _harness(
        ["delegate", "-w", str(tmp_path), "-p", "fake", "--json", "-"], stdin=b"say hi"
    )
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert all(isinstance(record.get("type"), str) for record in records)
    assert records[-1] == {
        "type": "result",
        "provider": "fake",
        "stop_reason": "completed",
        "output": "hello from the fake",
        "structured_output": None,
        "diagnostic": None,
        "start_failure": None,
        "teardown": None,
        "timed_out": False,
        "usage": None,
        "exit_code": 0,
    }
    assert err == ""


async def test_delegate_timeout_stops_a_hung_child(tmp_path: Path) -> None:
    _fake_provider(tmp_path, "hung", {"hang_at": "prompt"})
    code, out, err = await _harness(
        ["delegate", "-w", str(tmp_path), "-p", "hung", "--timeout", "1", "--json", "hi"]
    )
    result = json.loads(out.splitlines()[-1])
    assert code == 1, err
    assert (result["stop_reason"], result["timed_out"], result["exit_code"]) == (
        "aborted",
        True,
        1,
    )


async def test_delegate_plain_prints_output_then_status_apart(tmp_path: Path) -> None:
    _fake_provider(tmp_path, "fake", {"text": "plain answer"})
    code, out, err = await _harness(["delegate", "-w", str(tmp_path), "-p", "fake", "hi"])
    assert (code, out) == (0, "plain answer\n")
    assert err.splitlines()[-1] == "stop reason: completed"


async def test_delegate_names_why_a_child_could_not_start(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text(
        '[providers.gone]\nkind = "acp"\ncommand = "no-such-harness-child-x"\n', encoding="utf-8"
    )
    code, out, err = await _harness(["delegate", "-w", str(tmp_path), "-p", "gone", "hi"])
    assert code == 1
    assert out == ""
    assert err.splitlines() == [
        "stop reason: error",
        "diagnostic: Subagent failure (provider: gone; stage: process; category: process-start)",
        "harness: the child could not start: the command was not found "
        "(is it installed and on PATH?)",
    ]


# -- config: discovery, built-ins kept, ${VAR} references ---------------------------------


async def test_env_references_resolve_at_spawn_and_are_never_shown(tmp_path: Path) -> None:
    _fake_provider(tmp_path, "fake", {"echo_env": ["CHILD_TOKEN"]}, CHILD_TOKEN="${PARENT_TOKEN}")
    secret = "tok-4f1e-not-for-logs"
    code, out, err = await _harness(
        ["delegate", "-w", str(tmp_path), "-p", "fake", "hi"], env={"PARENT_TOKEN": secret}
    )
    assert (code, out) == (0, f"CHILD_TOKEN={secret}\n"), err
    code, out, err = await _harness(
        ["providers", "-w", str(tmp_path), "--no-check"], env={"PARENT_TOKEN": secret}
    )
    assert code == 0
    assert secret not in out + err
    assert "PARENT_TOKEN" not in out + err


async def test_an_unset_reference_names_the_file_and_variable(tmp_path: Path) -> None:
    path = _fake_provider(tmp_path, "fake", {}, CHILD_TOKEN="${UNSET_FOR_HARNESS_TEST}")
    code, _, err = await _harness(["delegate", "-w", str(tmp_path), "-p", "fake", "hi"])
    assert code == 2
    assert err == (
        f"harness: {path.resolve()}: providers.fake.env.CHILD_TOKEN: references "
        "${UNSET_FOR_HARNESS_TEST}, which is not set in the environment\n"
    )


async def test_user_config_is_found_and_builtins_stay(tmp_path: Path, no_user_config: Path) -> None:
    user_dir = no_user_config / "harness"
    user_dir.mkdir()
    _fake_provider(user_dir, "mine", {"text": "from the user config"})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    code, out, err = await _harness(["providers", "-w", str(workspace), "--no-check", "--json"])
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    names = [(r["name"], r["builtin"]) for r in records if r["type"] == "provider"]
    assert names == [("acp", True), ("dsh-sdk", True), ("model", True), ("mine", False)]
    assert records[-1]["config"] == str(user_dir / "harness.toml")
    code, out, _ = await _harness(["delegate", "-w", str(workspace), "-p", "mine", "hi"])
    assert (code, out) == (0, "from the user config\n")


async def test_a_table_named_like_a_builtin_replaces_only_that_one(tmp_path: Path) -> None:
    _fake_provider(tmp_path, "acp", {"text": "replaced"})
    code, out, _ = await _harness(["providers", "-w", str(tmp_path), "--no-check", "--json"])
    rows = [json.loads(line) for line in out.splitlines()][:-1]
    assert code == 0
    assert [(r["name"], r["builtin"]) for r in rows] == [
        ("acp", False),
        ("dsh-sdk", True),
        ("model", True),
    ]


async def test_a_piped_table_is_not_wrapped(tmp_path: Path) -> None:
    long_arg = "x" * 150
    (tmp_path / "harness.toml").write_text(
        f'[providers.wide]\nkind = "acp"\ncommand = "wide-child"\nargs = ["{long_arg}"]\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [str(SCRIPT), "providers", "-w", str(tmp_path), "--no-check"], check=False, env=env
        )
    lines = done.stdout.decode().splitlines()
    assert done.returncode == 0
    assert any(f"wide-child {long_arg}" in line for line in lines)


# -- approval on a terminal ---------------------------------------------------------------


def _approval_rules(marker: Path) -> dict[str, Any]:
    call = {"name": "process_execute", "arguments": {"command": f"echo ran > {marker}"}}
    replies = [{"tool_calls": [call]}, {"text": "finished"}]
    # Each rule's replies are consumed once: one rule per run of the same test.
    return {
        "rules": [
            {"match": "please run", "replies": replies},
            {"match": "pipe run", "replies": replies},
        ]
    }


async def _run_on_pty(args: list[str], answer: bytes) -> tuple[int, str]:
    """Runs the script with stdin/stderr on a pty; answers the first `[y/N]` with `answer`."""
    import pty

    leader, follower = pty.openpty()
    os.set_blocking(leader, False)
    seen = bytearray()

    async def read_screen() -> None:
        answered = False
        while True:
            await anyio.wait_readable(leader)
            try:
                data = os.read(leader, 4096)
            except BlockingIOError:
                continue
            except OSError:  # EIO: the last process holding the terminal is gone
                return
            if not data:
                return
            seen.extend(data)
            if not answered and b"[y/N]" in seen:
                os.write(leader, answer)
                answered = True

    code = -1
    try:
        with anyio.fail_after(60):
            async with await anyio.open_process(
                [str(SCRIPT), *args], stdin=follower, stderr=follower, env=_env()
            ) as process:
                os.close(follower)
                follower = -1
                async with anyio.create_task_group() as tg:
                    tg.start_soon(read_screen)
                    code = await process.wait()
                    # What the script wrote last is still in the pty: read it, briefly.
                    tg.cancel_scope.deadline = anyio.current_time() + 5
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    return code, seen.decode(errors="replace")


@pytest.mark.parametrize(("answer", "ran"), [(b"y\n", True), (b"n\n", False)])
async def test_run_asks_before_an_execute_action_on_a_terminal(
    tmp_path: Path, answer: bytes, ran: bool
) -> None:
    marker = tmp_path / "marker.txt"
    async with open_scripted_model_server(_approval_rules(marker)) as server:
        args = ["run", "--mode", "execute", "-w", str(tmp_path), "--base-url", server.base_url]
        code, screen = await _run_on_pty([*args, "please run it"], answer)
    assert code == 0, screen
    assert f"Allow process_execute: echo ran > {marker} ? [y/N]" in screen
    assert marker.exists() is ran


async def test_yes_and_a_pipe_never_ask(tmp_path: Path) -> None:
    marker = tmp_path / "marker.txt"
    async with open_scripted_model_server(_approval_rules(marker)) as server:
        args = ["run", "--mode", "execute", "-w", str(tmp_path), "--base-url", server.base_url]
        code, screen = await _run_on_pty([*args, "--yes", "please run it"], b"")
        assert (code, marker.exists()) == (0, True)
        assert "[y/N]" not in screen
        marker.unlink()
        code, _, err = await _harness([*args, "pipe run it"])
    assert (code, marker.exists()) == (0, True)
    assert "[y/N]" not in err


# -- delegate's live events ----------------------------------------------------------------


async def test_delegate_json_streams_events_before_the_run_settles(tmp_path: Path) -> None:
    """The child reports a thought and a tool call, then blocks on a gate only this test opens.

    The first event line must arrive while the gate is still shut: by ordering, not by time.
    """
    gate = tmp_path / "gate"
    script = {"thought": "considering", "tool_call": True, "gate_file": str(gate), "text": "done"}
    _fake_provider(tmp_path, "gated", script)
    argv = [str(SCRIPT), "delegate", "-w", str(tmp_path), "-p", "gated", "--json", "hi"]
    lines: list[dict[str, Any]] = []
    with anyio.fail_after(60):
        async with await anyio.open_process(argv, env=_env()) as process:
            assert process.stdout is not None
            buffer = b""
            async for chunk in process.stdout:
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    lines.append(json.loads(line))
                    if len(lines) == 1:
                        assert not gate.exists()
                        assert lines[0]["type"] != "result"
                        gate.write_text("open", encoding="utf-8")
            code = await process.wait()
    assert code == 0
    kinds = [line["type"] for line in lines]
    assert kinds[:3] == ["thought", "tool_call", "tool_call"]
    assert kinds[-1] == "result"
    assert lines[0] == {"type": "thought", "text": "considering"}
    assert lines[1] == {
        "type": "tool_call",
        "call_id": "call-noise",
        "kind": "read",
        "status": "pending",
        "title": "noise tool call",
        "exit_code": None,
    }
    assert "".join(line["text"] for line in lines if line["type"] == "message") == "done"
    assert lines[-1]["output"] == "done"


async def test_delegate_plain_shows_a_line_per_tool_call(tmp_path: Path) -> None:
    _fake_provider(tmp_path, "tools", {"tool_call": True, "plan": True, "text": "ok"})
    code, out, err = await _harness(["delegate", "-w", str(tmp_path), "-p", "tools", "hi"])
    assert (code, out) == (0, "ok\n")
    assert err.splitlines() == [
        "tool pending: noise tool call [read]",
        "tool completed: noise tool call [read]",
        "plan: 0/1 steps done",
        "stop reason: completed",
    ]


# -- MCP servers for `harness run` -----------------------------------------------------------


def _mcp_rules(token: str) -> dict[str, Any]:
    call = {"name": "notes__read_note", "arguments": {"name": "todo"}}
    return {"rules": [{"match": token, "replies": [{"tool_calls": [call]}, {"text": "read it"}]}]}


async def test_run_uses_an_mcp_server_from_the_flag(tmp_path: Path) -> None:
    from model_agent.testing import mcp_test_server_command

    command = " ".join(mcp_test_server_command())
    async with open_scripted_model_server(_mcp_rules("MCP-FLAG")) as server:
        args = ["run", "-w", str(tmp_path), "--base-url", server.base_url]
        code, out, err = await _harness([*args, "--mcp", f"notes={command}", "MCP-FLAG"])
    assert (code, out) == (0, "read it\n"), err
    assert "notes__read_note" in err
    assert "note todo: all good" in err


async def test_run_uses_the_mcp_table_of_harness_toml(tmp_path: Path) -> None:
    from model_agent.testing import mcp_test_server_command

    command, *args = mcp_test_server_command()
    (tmp_path / "harness.toml").write_text(
        f"[mcp.notes]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n"
        'env = { NOTE_TOKEN = "${PARENT_NOTE_TOKEN}" }\n',
        encoding="utf-8",
    )
    async with open_scripted_model_server(_mcp_rules("MCP-TOML")) as server:
        code, out, err = await _harness(
            ["run", "-w", str(tmp_path), "--base-url", server.base_url, "MCP-TOML"],
            env={"PARENT_NOTE_TOKEN": "t"},
        )
    assert (code, out) == (0, "read it\n"), err
    assert "note todo: all good" in err


async def test_a_bad_mcp_flag_is_exit_2(tmp_path: Path) -> None:
    code, _, err = await _harness(
        ["run", "-w", str(tmp_path), "--base-url", "http://127.0.0.1:9", "--mcp", "nope", "hi"]
    )
    assert code == 2
    assert err == 'harness: --mcp: expected NAME=URL or "NAME=COMMAND [ARGS...]"\n'


# -- delegate: permission, fs, terminal, strict (ACP) ------------------------------------------

_PERMISSION = {"permission": {"tool_kind": "execute", "title": "run make"}, "text": " done"}


@pytest.mark.parametrize(
    ("flags", "output", "code"),
    [
        (["--permission", "allow"], "[permission selected allow] done\n", 0),
        (["--permission", "reject"], "[permission cancelled] done\n", 0),
        (["--permission", "reject", "--strict"], "[permission cancelled] done\n", 1),
    ],
)
async def test_delegate_permission_flags(
    tmp_path: Path, flags: list[str], output: str, code: int
) -> None:
    _fake_provider(tmp_path, "asker", _PERMISSION)
    got, out, err = await _harness(["delegate", "-w", str(tmp_path), "-p", "asker", *flags, "go"])
    assert (got, out) == (code, output), err
    if "reject" in flags:
        assert err.splitlines()[-2:] == [
            "stop reason: completed",
            "diagnostic: ACP permission (policy: reject; tool kind: execute; decision: cancelled)",
        ]


async def test_delegate_permission_ask_asks_at_the_terminal(tmp_path: Path) -> None:
    _fake_provider(tmp_path, "asker", _PERMISSION)
    args = ["delegate", "-w", str(tmp_path), "-p", "asker", "--permission", "ask", "go"]
    code, screen = await _run_on_pty(args, b"y\n")
    assert code == 0
    assert "Allow the child to execute: run make ? [y/N]" in screen


async def test_delegate_permission_ask_without_a_terminal_is_exit_2(tmp_path: Path) -> None:
    _fake_provider(tmp_path, "asker", _PERMISSION)
    code, _, err = await _harness(
        ["delegate", "-w", str(tmp_path), "-p", "asker", "--permission", "ask", "go"]
    )
    assert (code, err) == (2, "harness: --permission ask needs a terminal on stdin to ask at\n")


async def test_acp_flags_on_another_kind_are_exit_2(tmp_path: Path) -> None:
    code, _, err = await _harness(
        ["delegate", "-w", str(tmp_path), "-p", "model", "--fs", "read", "go"],
        env={"DEEPSEEK_API_KEY": "k"},
    )
    assert code == 2
    assert err == 'harness: --fs and --terminal apply to ACP providers; "model" is model\n'


async def test_delegate_live_view_on_a_terminal(tmp_path: Path) -> None:
    _fake_provider(tmp_path, "tools", {"tool_call": True, "text": "live answer", "chunks": 3})
    code, screen = await _run_on_pty(["delegate", "-w", str(tmp_path), "-p", "tools", "go"], b"")
    assert code == 0
    assert "tool pending: noise tool call [read]" in screen
    assert "tool completed: noise tool call [read]" in screen
    assert "stop reason: completed" in screen


async def test_delegate_to_a_codex_table_runs_the_fake_app_server(tmp_path: Path) -> None:
    """`kind = "codex"`: `harness delegate -p codex` speaks the app-server protocol."""
    from subagent_codex.testing import SCENARIO_ENV

    turn = [
        {"message": "hello from the fake codex", "phase": "final_answer"},
        {"usage": [12, 2, 5]},
        {"complete": "completed"},
    ]
    scenario = json.dumps({"turn": turn})
    (tmp_path / "harness.toml").write_text(
        f'[providers.codex]\nkind = "codex"\ncommand = {json.dumps(sys.executable)}\n'
        f'args = ["-m", "subagent_codex.testing"]\nsandbox = "read-only"\n'
        f"env = {{ {SCENARIO_ENV} = {json.dumps(scenario)} }}\n{GRACES}",
        encoding="utf-8",
    )
    code, out, err = await _harness(["delegate", "-w", str(tmp_path), "-p", "codex", "hi"])
    assert (code, out) == (0, "hello from the fake codex\n"), err
    code, out, err = await _harness(["providers", "-w", str(tmp_path), "--no-check", "--json"])
    assert code == 0, err
    kinds = {
        r["name"]: (r["kind"], r["permission"])
        for r in map(json.loads, out.splitlines())
        if r["type"] == "provider"
    }
    assert kinds["codex"] == ("codex", "reject")


async def test_permission_override_reaches_a_codex_table(tmp_path: Path) -> None:
    """`--permission allow` applies to a codex provider: its approval is accepted."""
    from subagent_codex.testing import SCENARIO_ENV

    answers = tmp_path / "answers.jsonl"
    turn = [
        {"approval": "command"},
        {"message": "ok", "phase": "final_answer"},
        {"complete": "completed"},
    ]
    scenario = json.dumps({"turn": turn, "answers_to": str(answers)})
    (tmp_path / "harness.toml").write_text(
        f'[providers.codex]\nkind = "codex"\ncommand = {json.dumps(sys.executable)}\n'
        f'args = ["-m", "subagent_codex.testing"]\n'
        f"env = {{ {SCENARIO_ENV} = {json.dumps(scenario)} }}\n{GRACES}",
        encoding="utf-8",
    )
    args = ["delegate", "-w", str(tmp_path), "-p", "codex", "--permission", "allow", "hi"]
    code, out, err = await _harness(args)
    assert (code, out) == (0, "ok\n"), err
    sent = [json.loads(line) for line in answers.read_text(encoding="utf-8").splitlines()]
    assert [a["result"] for a in sent] == [{"decision": "accept"}]
