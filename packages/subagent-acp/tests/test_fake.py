"""The fake child speaks the wire without `acp`; here the SDK's own client checks its frames."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import spawn_agent_process
from acp.schema import AllowedOutcome, RequestPermissionResponse, TextContentBlock
from subagent_acp.testing import KNOBS, fake_child_argv, main, script_env
from subagent_acp.testing._script import load_script


class RecordingClient:
    """A minimal client written directly on the SDK, as any ACP host would."""

    def __init__(self) -> None:
        self.updates: list[str] = []
        self.text: list[str] = []
        self.permission_kinds: list[str | None] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update.session_update)
        if update.session_update == "agent_message_chunk" and isinstance(
            update.content, TextContentBlock
        ):
            self.text.append(update.content.text)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        self.permission_kinds.append(tool_call.kind)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=options[0].option_id, outcome="selected")
        )


async def test_frames_are_valid_for_the_sdk_client(tmp_path: Path) -> None:
    script = {
        "thought": "thinking",
        "tool_call": True,
        "plan": True,
        "image_chunk": True,
        "text": "hello sdk",
        "chunks": 3,
        "permission": {"tool_kind": "execute"},
        "stop_reason": "max_tokens",
    }
    client = RecordingClient()
    argv = fake_child_argv()
    with anyio.fail_after(60):
        async with spawn_agent_process(
            client,
            argv[0],
            *argv[1:],
            env=script_env(script),
            cwd=tmp_path,
            transport_kwargs={"stderr": None},
        ) as (conn, _process):
            init = await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            response = await conn.prompt(
                session_id=session.session_id, prompt=[TextContentBlock(type="text", text="hi")]
            )
    assert init.protocol_version == 1
    assert session.session_id == "fake-session-1"
    assert response.stop_reason == "max_tokens"
    assert client.updates == [
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "agent_message_chunk",  # the image chunk
        "agent_message_chunk",  # the permission outcome echo
        "agent_message_chunk",
        "agent_message_chunk",
        "agent_message_chunk",
    ]
    assert "".join(client.text) == "[permission selected allow]hello sdk"
    assert client.permission_kinds == ["execute"]


async def test_hang_answers_cancelled_after_session_cancel(tmp_path: Path) -> None:
    client = RecordingClient()
    argv = fake_child_argv()
    with anyio.fail_after(60):
        async with spawn_agent_process(
            client,
            argv[0],
            *argv[1:],
            env=script_env({"hang_at": "prompt"}),
            transport_kwargs={"stderr": None},
        ) as (conn, _process):
            await conn.initialize(protocol_version=1)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            async with anyio.create_task_group() as tg:
                reasons: list[str] = []

                async def prompt() -> None:
                    response = await conn.prompt(session_id=session.session_id, prompt=[])
                    reasons.append(response.stop_reason)

                tg.start_soon(prompt)
                await anyio.wait_all_tasks_blocked()
                await conn.cancel(session_id=session.session_id)
    assert reasons == ["cancelled"]


def test_script_sources_and_env_knobs(tmp_path: Path) -> None:
    file = tmp_path / "script.json"
    file.write_text(json.dumps({"text": "from file", "chunks": 2}), "utf-8")
    assert load_script(["--script", str(file)], {}) == {"text": "from file", "chunks": 2}
    assert load_script(["--script-json", '{"stop_reason": "refusal"}'], {}) == {
        "stop_reason": "refusal"
    }
    environ = {
        "ACP_FAKE_SCRIPT": json.dumps({"text": "inline", "chunks": 4}),
        "ACP_FAKE_CHUNKS": "7",
        "ACP_FAKE_STOP_REASON": "max_tokens",
        "ACP_FAKE_ECHO_ENV": '["HOME"]',
    }
    assert load_script([], environ) == {
        "text": "inline",
        "chunks": 7,
        "stop_reason": "max_tokens",
        "echo_env": ["HOME"],
    }
    assert load_script([], {"ACP_FAKE_SCRIPT_FILE": str(file)}) == {
        "text": "from file",
        "chunks": 2,
    }


def test_unknown_knob_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--script-json", '{"no_such_knob": 1}']) == 2
    assert "unknown knobs: no_such_knob" in capsys.readouterr().err


def test_every_documented_knob_is_known() -> None:
    reference = (Path(__file__).parents[1] / "AGENTS.md").read_text("utf-8")
    for knob in KNOBS:
        assert f"`{knob}`" in reference, knob


def test_runs_as_a_module() -> None:
    request = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    completed = subprocess.run(
        [*fake_child_argv()],
        input=(json.dumps(request) + "\n").encode(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert json.loads(completed.stdout) == {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []},
    }
    assert sys.executable in fake_child_argv()


def test_fake_child_imports_neither_acp_nor_the_provider() -> None:
    code = (
        "import sys, subagent_acp.testing\n"
        "print(sorted(m for m in ('acp', 'pydantic', 'anyio', 'subagent_core', 'subagent_acp._run')"
        " if m in sys.modules))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=60, check=True, encoding="utf-8"
    )
    assert completed.stdout.strip() == "[]"
