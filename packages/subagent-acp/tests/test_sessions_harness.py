"""`harness acp-agent` as the ACP child of a session, keyless against the scripted model server.

The agent keeps its own sessions under `--state-dir` and advertises `session/resume`, so a
resumed session is a fresh `harness acp-agent` process continuing the recorded one through ACP
like any other agent: the model server sees turn 1's prompt in turn 2's request. Keyless: with
a loopback base URL the agent needs no key (it answers `auth_required` only for the default
DeepSeek endpoint without one); the variable is set to a dummy as the harness's own tests do.
Skips itself when the harness or its scripted model server is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import SessionRequest, SubagentRegistry, SubagentStartError

if importlib.util.find_spec("harness") is None:
    pytest.skip("the harness is not installed", allow_module_level=True)
scripted = pytest.importorskip("model_agent.testing")

RULES = {"rules": [{"match": "alpha-7731", "replies": [{"text": "ONE"}, {"text": "TWO"}]}]}


def _agent(argv: list[str], env: dict[str, str | None]) -> ACPConfig:
    """The agent exits on stdin EOF once its turns are saved: the ladder gives it the time."""
    return ACPConfig(
        command=argv[0],
        args=argv[1:],
        env=env,
        dispose_eof_grace_seconds=2.0,
        dispose_grace_seconds=0.5,
        dispose_kill_grace_seconds=1.0,
    )


def _config(base_url: str, tmp_path: Path) -> ACPConfig:
    argv = [sys.executable, "-m", "harness", "acp-agent", "--base-url", base_url]
    argv += ["--state-dir", str(tmp_path / "agent-state"), "--no-ask-permission"]
    env: dict[str, str | None] = {
        "DEEPSEEK_API_KEY": "sk-dummy-not-a-key",
        "DEEPSEEK_BASE_URL": None,
        "DEEPSEEK_MODEL": None,
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),  # no user harness.toml reaches the agent
    }
    return _agent(argv, env)


def _request(tmp_path: Path) -> SessionRequest:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return SessionRequest(cwd=workspace, state_dir=tmp_path / "sessions")


async def _first_turn(registry: SubagentRegistry, request: SessionRequest) -> str:
    async with await registry.open_session("acp", request) as session:
        result = await (await session.run("remember the word alpha-7731")).result()
        assert (result.stop_reason, result.output, result.diagnostic) == ("completed", "ONE", None)
        return session.handle


def _sent(request: dict[str, Any]) -> str:
    return json.dumps(request.get("messages"))


@pytest.mark.timeout(120)
async def test_a_resumed_harness_agent_continues_the_conversation(tmp_path: Path) -> None:
    with anyio.fail_after(110):
        async with scripted.open_scripted_model_server(RULES) as server:
            registry = SubagentRegistry()
            registry.register(ACPProvider(_config(server.base_url, tmp_path)))
            request = _request(tmp_path)
            handle = await _first_turn(registry, request)
            async with await registry.resume_session("acp", handle, request) as resumed:
                second = await (await resumed.run("which word was it?")).result()
                assert resumed.turns == 2
            sent = server.requests
    assert (second.stop_reason, second.output, second.diagnostic) == ("completed", "TWO", None)
    assert len(sent) == 2
    assert "remember the word alpha-7731" in _sent(sent[1])
    assert "which word was it?" in _sent(sent[1])
    record = json.loads((tmp_path / "sessions" / handle / "record.json").read_text("utf-8"))
    assert record["child_session"] not in second.output


@pytest.mark.timeout(120)
async def test_a_harness_agent_whose_store_is_gone_is_a_resume_miss(tmp_path: Path) -> None:
    with anyio.fail_after(110):
        async with scripted.open_scripted_model_server(RULES) as server:
            registry = SubagentRegistry()
            registry.register(ACPProvider(_config(server.base_url, tmp_path)))
            request = _request(tmp_path)
            handle = await _first_turn(registry, request)
            shutil.rmtree(tmp_path / "agent-state" / "sessions")
            with pytest.raises(SubagentStartError) as raised:
                await registry.resume_session("acp", handle, request)
            asked = len(server.requests)
    assert raised.value.diagnostic == (
        "Subagent failure (provider: acp; stage: new-session; category: resume-miss)"
    )
    assert asked == 1


@pytest.mark.timeout(120)
async def test_a_keyless_harness_agent_on_its_default_endpoint_is_an_authentication_error(
    tmp_path: Path,
) -> None:
    """Without a key for DeepSeek's own endpoint the agent answers `session/new` (and every
    prompt) with `auth_required`: the session never starts, nothing is asked of a model."""
    argv = [sys.executable, "-m", "harness", "acp-agent", "--state-dir", str(tmp_path / "s")]
    env: dict[str, str | None] = {
        "DEEPSEEK_API_KEY": None,
        "DEEPSEEK_BASE_URL": None,
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
    }
    config = _agent(argv, env)
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    with anyio.fail_after(110), pytest.raises(SubagentStartError) as raised:
        await registry.open_session("acp", _request(tmp_path))
    assert raised.value.diagnostic == (
        "Subagent failure (provider: acp; stage: new-session; category: authentication)"
    )
    assert list((tmp_path / "sessions").iterdir()) == []
