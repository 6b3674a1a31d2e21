"""`harness acp-agent` driven by the official TypeScript ACP SDK, every frame schema-checked.

The SDK is installed with npm into a cache directory the first time (self-skips only when
neither node nor npm is available). `test_acp_agent_ts_client.mjs` runs a list of requests
through the SDK's client app and checks each frame the agent writes against the SDK's own
zod schema for it; a value the schema had to salvage counts as invalid.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")

SDK_PACKAGE = "@agentclientprotocol/sdk"
SDK_VERSION = "2.4.0"
SCRIPT = Path(__file__).with_name("test_acp_agent_ts_client.mjs")
# Keys the stable schema of the TS SDK does not know: the env-var auth method's own fields
# (it reads the method as an agent-handled one).
_UNKNOWN_TO_THE_TS_SCHEMA = {
    "initialize result.authMethods.0.type",
    "initialize result.authMethods.0.vars",
    "initialize result.authMethods.0.link",
}


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "subagent-harness-tests" / f"acp-ts-sdk-{SDK_VERSION}"


@pytest.fixture
async def ts_sdk() -> Path:
    """The installed SDK package directory (npm install into the cache on first use)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None and npm is None:
        pytest.skip("neither node nor npm is available")
    assert node is not None, "npm without node"
    assert npm is not None, "node without npm"
    root = _cache_dir()
    package = root / "node_modules" / "@agentclientprotocol" / "sdk"
    done = root / ".installed"
    if not done.exists():
        root.mkdir(parents=True, exist_ok=True)
        (root / "package.json").write_text('{"private": true}\n', encoding="utf-8")
        with anyio.fail_after(300):
            await anyio.run_process(
                [
                    npm,
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--prefix",
                    str(root),
                    f"{SDK_PACKAGE}@{SDK_VERSION}",
                ],
                check=True,
            )
        done.write_text(SDK_VERSION, encoding="utf-8")
    return package


async def _drive(
    sdk: Path,
    steps: list[dict[str, Any]],
    *,
    base_url: str | None,
    state_dir: Path,
    extra: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    agent = [sys.executable, "-m", "harness", "acp-agent", "--state-dir", str(state_dir)]
    if base_url is not None:
        agent += ["--base-url", base_url]
    config = {
        "sdk": str(sdk),
        "agent": [*agent, *extra],
        "env": dict(os.environ) if env is None else env,
        "steps": steps,
    }
    node = shutil.which("node")
    assert node is not None
    with anyio.fail_after(90):
        done = await anyio.run_process([node, str(SCRIPT), json.dumps(config)], check=True)
    report = json.loads(done.stdout)
    assert report["invalid"] == [], report["invalid"]
    assert set(report["dropped"]) <= _UNKNOWN_TO_THE_TS_SCHEMA, report["dropped"]
    assert report["exit"] == {"code": 0, "signal": None}
    return report


def _initialize() -> dict[str, Any]:
    return {
        "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}},
    }


def _new(workspace: Path) -> dict[str, Any]:
    return {"method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}}


def _prompt(text: str) -> dict[str, Any]:
    return {
        "method": "session/prompt",
        "params": {"sessionId": "$session", "prompt": [{"type": "text", "text": text}]},
    }


def _texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (m["role"], m["content"])
        for m in request["messages"]
        if m["role"] in ("user", "assistant") and m.get("content")
    ]


_RULES = [
    {
        "match": "my number is 41",
        "replies": [{"text": "Noted: 41."}, {"text": "41 plus one is 42."}],
    }
]


async def test_two_prompts_share_one_conversation(
    ts_sdk: Path, scripted_model: Any, workspace: Path, tmp_path: Path
) -> None:
    steps = [_initialize(), _new(workspace), _prompt("my number is 41"), _prompt("add one")]
    async with scripted_model(_RULES) as server:
        report = await _drive(ts_sdk, steps, base_url=server.base_url, state_dir=tmp_path / "s")
    stops = [r["ok"]["stopReason"] for r in report["results"] if r["op"] == "session/prompt"]
    assert stops == ["end_turn", "end_turn"]
    assert _texts(server.requests[-1]) == [
        ("user", "my number is 41"),
        ("assistant", "Noted: 41."),
        ("user", "add one"),
    ]
    init = report["results"][0]["ok"]
    assert init["agentCapabilities"]["loadSession"] is True
    assert init["agentCapabilities"]["sessionCapabilities"] == {"list": {}, "resume": {}}


async def test_a_killed_agent_restarts_and_loads_the_session(
    ts_sdk: Path, scripted_model: Any, workspace: Path, tmp_path: Path
) -> None:
    load: dict[str, Any] = {
        "method": "session/load",
        "params": {"sessionId": "$session", "cwd": str(workspace), "mcpServers": []},
    }
    listing = {"method": "session/list", "params": {"cwd": str(workspace)}}
    steps: list[dict[str, Any]] = [
        _initialize(),
        _new(workspace),
        _prompt("my number is 41"),
        {"op": "restart"},
        _initialize(),
        listing,
        {"op": "mark"},
        load,
        {"op": "mark"},
        _prompt("add one"),
    ]
    async with scripted_model(_RULES) as server:
        report = await _drive(ts_sdk, steps, base_url=server.base_url, state_dir=tmp_path / "s")
    results = report["results"]
    session_id = results[1]["ok"]["sessionId"]
    assert [s["sessionId"] for s in results[5]["ok"]["sessions"]] == [session_id]
    before, after = results[6]["updates"], results[8]["updates"]
    replayed = report["updates"][before:after]
    assert [(u["sessionUpdate"], u["content"]["text"]) for u in replayed] == [
        ("user_message_chunk", "my number is 41"),
        ("agent_message_chunk", "Noted: 41."),
    ]
    assert results[9]["ok"]["stopReason"] == "end_turn"
    assert _texts(server.requests[-1]) == [
        ("user", "my number is 41"),
        ("assistant", "Noted: 41."),
        ("user", "add one"),
    ]


async def test_ask_mode_refuses_a_forged_command(
    ts_sdk: Path, scripted_model: Any, workspace: Path, tmp_path: Path
) -> None:
    forged = {
        "match": "sneak",
        "replies": [
            {
                "tool_calls": [
                    {"name": "process_execute", "arguments": {"command": "echo x > proof.txt"}}
                ]
            },
            {"text": "done"},
        ],
    }
    set_mode = {
        "method": "session/set_mode",
        "params": {"sessionId": "$session", "modeId": "ask"},
    }
    steps = [_initialize(), _new(workspace), set_mode, _prompt("sneak")]
    async with scripted_model([forged]) as server:
        report = await _drive(ts_sdk, steps, base_url=server.base_url, state_dir=tmp_path / "s")
    assert not (workspace / "proof.txt").exists()
    assert report["permissions"] == []
    kinds = [u["sessionUpdate"] for u in report["updates"]]
    assert "current_mode_update" in kinds
    statuses = [
        u.get("status") for u in report["updates"] if u["sessionUpdate"] == "tool_call_update"
    ]
    assert statuses == ["failed"]


async def test_without_a_key_initialize_offers_auth_and_new_session_needs_it(
    ts_sdk: Path, workspace: Path, tmp_path: Path
) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "DEEPSEEK_MODEL")
    }
    steps = [_initialize(), _new(workspace)]
    report = await _drive(ts_sdk, steps, base_url=None, state_dir=tmp_path / "s", env=env)
    init, new = report["results"]
    assert [m["id"] for m in init["ok"]["authMethods"]] == ["deepseek-api-key"]
    assert new["error"]["code"] == -32000


async def test_a_write_is_an_edit_tool_call_with_a_diff(
    ts_sdk: Path, scripted_model: Any, workspace: Path, tmp_path: Path
) -> None:
    write = {"name": "write_file", "arguments": {"path": "notes.txt", "content": "new\n"}}
    rules = [{"match": "rewrite", "replies": [{"tool_calls": [write]}, {"text": "ok"}]}]
    steps = [_initialize(), _new(workspace), _prompt("rewrite")]
    async with scripted_model(rules) as server:
        report = await _drive(ts_sdk, steps, base_url=server.base_url, state_dir=tmp_path / "s")
    (start,) = [u for u in report["updates"] if u["sessionUpdate"] == "tool_call"]
    assert start["kind"] == "edit"
    assert start["locations"] == [{"path": str(workspace / "notes.txt")}]
    assert start["content"] == [
        {"type": "diff", "path": str(workspace / "notes.txt"), "newText": "new\n"}
    ]
    assert report["permissions"] == ["edit"]
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "new\n"


async def test_a_delegated_child_and_client_mcp_servers_validate(
    ts_sdk: Path, scripted_model: Any, workspace: Path, tmp_path: Path
) -> None:
    """Child activity updates, the child's own permission request and MCP tools: all valid."""
    from model_agent.testing import mcp_test_server_command

    command, *args = mcp_test_server_command()
    child_calls = [
        {"name": "process_execute", "arguments": {"command": "echo child-ran"}},
        {"name": "notes__read_note", "arguments": {"name": "todo"}},
    ]
    delegate = {
        "name": "subagent_delegate",
        "arguments": {"task": "CHILD-TASK: work", "description": "kid"},
    }
    rules = [
        {"match": "CHILD-TASK", "replies": [{"tool_calls": child_calls}, {"text": "kid done"}]},
        {"match": "delegate it", "replies": [{"tool_calls": [delegate]}, {"text": "done"}]},
    ]
    new = {
        "method": "session/new",
        "params": {
            "cwd": str(workspace),
            "mcpServers": [{"name": "notes", "command": command, "args": args, "env": []}],
        },
    }
    steps = [_initialize(), new, _prompt("delegate it")]
    async with scripted_model(rules) as server:
        report = await _drive(ts_sdk, steps, base_url=server.base_url, state_dir=tmp_path / "s")
    assert report["results"][2]["ok"]["stopReason"] == "end_turn"
    assert report["permissions"] == ["think", "execute"]
    starts = [u for u in report["updates"] if u["sessionUpdate"] == "tool_call"]
    assert [(u["kind"], u["title"]) for u in starts] == [
        ("think", "Subagent: kid"),
        ("execute", "echo child-ran"),
    ]
    child_results = [m["content"] for m in server.requests[-2]["messages"] if m["role"] == "tool"]
    assert "note todo: all good" in child_results
