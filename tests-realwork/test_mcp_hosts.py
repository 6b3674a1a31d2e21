"""`harness mcp` under the real hosts, keyless: Claude Code and codex each call its `delegate`.

Each host runs as it would for a person (print mode / `codex exec`) with `harness mcp` in its
MCP configuration and its model service replaced by the package's loopback stub: the stub's
first answer calls the harness `delegate` tool (the fake ACP child answers it), its second is
the final text. The stub then holds the tool result the host passed back, exactly as the
server shaped it. The hosts are plain processes here (not contained), so what is left after
they exit is what they and `harness mcp` left: nothing.

Host facts these tests rely on (Claude Code 2.1.33x, codex 0.163): Claude names the tools
`mcp__harness__<tool>`, hides them behind its tool search unless `ENABLE_TOOL_SEARCH=false`, and
in print mode runs one only when `--allowedTools` names it; codex offers them as the namespace
tool `mcp__harness` (a call is `delegate` in that namespace), starts without a server that is
slow to answer unless it is `required`, runs its tools in `exec` only with
`default_tools_approval_mode = "approve"`, and reaches for the network for plugins unless
`features.plugins = false`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import psutil
import pytest
from subagent_core.testing import containment_processes

ANSWER = "hello from the fake child"
PROMPT = {"agent": "fake", "prompt": "say hello"}
STRUCTURED = {
    "output": ANSWER,
    "structured_output": None,
    "stop_reason": "completed",
    "diagnostic": None,
    "usage": {"input_tokens": 12, "output_tokens": 3, "cached_input_tokens": None},
    "cost": None,
    "session": None,
    "files_changed": None,
    "timed_out": False,
}
"""What the `delegate` tool returns for the fake child, and so what each host must pass on."""


@pytest.fixture
def mcp_root(tmp_path: Path) -> Path:
    """A root whose `harness.toml` names the fake ACP child as the provider `fake`."""
    root = tmp_path / "root"
    root.mkdir()
    script = tmp_path / "fake.json"
    usage = {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15}
    script.write_text(json.dumps({"text": ANSWER, "usage": usage}), "utf-8")
    (root / "harness.toml").write_text(
        "[providers.fake]\n"
        'kind = "acp"\n'
        f"command = {json.dumps(sys.executable)}\n"
        'args = ["-m", "subagent_acp.testing"]\n'
        f"env = {{ ACP_FAKE_SCRIPT_FILE = {json.dumps(str(script))} }}\n"
        "dispose_eof_grace_seconds = 0.5\n"
        "dispose_grace_seconds = 0.5\n",
        "utf-8",
    )
    return root


def _left() -> list[psutil.Process]:
    ours = containment_processes()
    alive: list[psutil.Process] = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.pid not in ours and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.Error:
            continue
    return alive


async def _host(argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> tuple[int, bytes]:
    """Runs the host to its exit; returns its exit code and stdout. Nothing it started may be
    alive 10 s after it exits."""
    process = await anyio.open_process(list(argv), cwd=cwd, env=env, stdin=None, stderr=None)
    out = bytearray()
    try:
        assert process.stdout is not None
        with anyio.fail_after(100):
            async for chunk in process.stdout:
                out.extend(chunk)
            code = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    with anyio.fail_after(10):
        while _left():  # noqa: ASYNC110 - other processes' exits; no event to wait on
            await anyio.sleep(0.05)
    return code, bytes(out)


def _harness_argv(root: Path) -> list[str]:
    return [sys.executable, "-m", "harness", "mcp", "-w", str(root)]


async def test_claude_code_calls_harness_delegate_and_gets_its_structured_result(
    mcp_root: Path, tmp_path: Path
) -> None:
    from subagent_claude._argv import bundled_cli  # pyright: ignore[reportPrivateUsage]
    from subagent_claude.testing import MessagesStub, stub_env, text_turn, tool_turn

    cli = bundled_cli() or shutil.which("claude")
    if cli is None:
        pytest.skip("the Claude Code CLI is not installed (subagent-claude[cli])")
    harness, *args = _harness_argv(mcp_root)
    state = tmp_path / "state"
    servers = {
        "harness": {"command": harness, "args": args, "env": {"HARNESS_STATE_DIR": str(state)}}
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}), "utf-8")
    turns = [tool_turn("mcp__harness__delegate", PROMPT), text_turn("DONE")]
    with MessagesStub(turns) as stub:
        env = {
            "PATH": os.environ["PATH"],
            **stub_env(stub, tmp_path / "home"),
            "ENABLE_TOOL_SEARCH": "false",
        }
        argv = [
            str(cli),
            "-p",
            "delegate the greeting",
            "--mcp-config",
            str(config),
            "--strict-mcp-config",
            "--allowedTools",
            "mcp__harness__delegate",
            "--output-format",
            "json",
        ]
        code, out = await _host(argv, cwd=mcp_root, env=env)
    assert code == 0
    assert json.loads(out)["result"] == "DONE"
    first, second = stub.model_requests[:2]
    offered = {tool["name"] for tool in cast(list[dict[str, Any]], first.body["tools"])}
    assert "mcp__harness__delegate" in offered
    (result,) = [
        block
        for message in cast(list[dict[str, Any]], second.body["messages"])
        if isinstance(message.get("content"), list)
        for block in cast(list[dict[str, Any]], message["content"])
        if block.get("type") == "tool_result"
    ]
    content = result["content"]
    text = content if isinstance(content, str) else "".join(b["text"] for b in content)
    assert json.loads(text) == STRUCTURED


async def test_codex_calls_harness_delegate_and_gets_its_structured_result(
    mcp_root: Path, tmp_path: Path
) -> None:
    from subagent_codex._config import bundled_codex  # pyright: ignore[reportPrivateUsage]
    from subagent_codex.testing import STUB_KEY_ENV, open_responses_stub, stub_provider_overrides

    binary = bundled_codex() or shutil.which("codex")
    if binary is None:
        pytest.skip("the codex binary is not installed (subagent-codex[cli])")
    home, scratch = tmp_path / "codex-home", tmp_path / "codex-tmp"
    home.mkdir()
    scratch.mkdir()
    harness, *args = _harness_argv(mcp_root)
    state = tmp_path / "state"
    steps = [
        {"call": "delegate", "namespace": "mcp__harness", "arguments": PROMPT},
        {"text": "DONE"},
    ]
    with open_responses_stub(steps) as stub:
        overrides = {
            **stub_provider_overrides(stub.base_url),
            "mcp_servers.harness.command": json.dumps(harness),
            "mcp_servers.harness.args": json.dumps(args),
            "mcp_servers.harness.env": f"{{ HARNESS_STATE_DIR = {json.dumps(str(state))} }}",
            "mcp_servers.harness.required": "true",
            "mcp_servers.harness.default_tools_approval_mode": '"approve"',
            "features.plugins": "false",
        }
        flags = [part for key, value in overrides.items() for part in ("-c", f"{key}={value}")]
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "CODEX_HOME": str(home),
            "TMPDIR": str(scratch),
            STUB_KEY_ENV: "sk-stub-dummy",
        }
        argv = [binary, "exec", *flags, "--skip-git-repo-check", "delegate the greeting"]
        code, out = await _host(argv, cwd=mcp_root, env=env)
    assert code == 0
    assert out.decode().strip().endswith("DONE")
    offered = [
        tool
        for tool in cast(list[dict[str, Any]], stub.requests[0]["tools"])
        if tool.get("name") == "mcp__harness"
    ]
    assert [tool["type"] for tool in offered] == ["namespace"]
    (output,) = [
        item["output"]
        for item in cast(list[dict[str, Any]], stub.requests[1]["input"])
        if item.get("type") == "function_call_output"
    ]
    assert json.loads(output.split("Output:\n", 1)[1]) == STRUCTURED
