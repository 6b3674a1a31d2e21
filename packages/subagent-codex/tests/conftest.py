from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_codex import CodexConfig, CodexProvider
from subagent_codex._config import bundled_codex
from subagent_codex.testing import STUB_KEY_ENV, ResponsesStub, stub_provider_overrides
from subagent_core import SubagentRegistry, SubagentRequest, SubagentResult
from subagent_core.testing.pytest_plugin import TEST_GRACES, process_test_fixtures

anyio_backend, process_leak_guard = process_test_fixtures()

STUB_SECRET = "sk-stub-SECRET-7f3a9c"
"""The dummy key the real binary sends to the stub; it must never reach a safe field."""


@pytest.fixture
def codex_binary() -> str:
    """The `[cli]` extra's binary; tests that need it skip without it."""
    path = bundled_codex()
    if path is None:
        pytest.skip("openai-codex-cli-bin (the [cli] extra) is not installed")
    return path


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    """A throwaway CODEX_HOME for the real binary."""
    home = tmp_path / "codex-home"
    home.mkdir()
    return home


@pytest.fixture
def child_tmpdir(tmp_path: Path) -> Path:
    """The child's TMPDIR: codex refuses to install its sandbox helper (`codex-linux-sandbox`)
    into a CODEX_HOME under the temporary directory, and its sandboxed commands then fail; a
    TMPDIR beside the throwaway home keeps the real sandbox working."""
    path = tmp_path / "tmpdir"
    path.mkdir()
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


MakeConfig = Callable[..., CodexConfig]


@pytest.fixture
def stub_config(
    codex_binary: str, codex_home: Path, child_tmpdir: Path, workspace: Path
) -> MakeConfig:
    """A CodexConfig running the real binary against `stub`; keywords override fields."""

    def build(stub: ResponsesStub, *, retries: int | None = None, **overrides: Any) -> CodexConfig:
        env: dict[str, str | None] = {
            "CODEX_HOME": str(codex_home),
            "TMPDIR": str(child_tmpdir),
            STUB_KEY_ENV: STUB_SECRET,
        }
        env.update(overrides.pop("env", {}))
        fields: dict[str, Any] = {
            "command": codex_binary,
            "cwd": workspace,
            "env": env,
            "config_overrides": stub_provider_overrides(stub.base_url, retries=retries),
            **TEST_GRACES,
        }
        fields.update(overrides)
        return CodexConfig(**fields)

    return build


@pytest.fixture
def stub_factory() -> Iterator[Callable[[list[Mapping[str, Any]]], ResponsesStub]]:
    stubs: list[ResponsesStub] = []

    def make(steps: list[Mapping[str, Any]]) -> ResponsesStub:
        stub = ResponsesStub(steps)
        stub.start()
        stubs.append(stub)
        return stub

    yield make
    for stub in stubs:
        stub.close()


def registry_for(config: CodexConfig) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(CodexProvider(config))
    return registry


RunOnce = Callable[..., Any]


@pytest.fixture
def run_once() -> RunOnce:
    return _run_once


async def _run_once(
    config: CodexConfig, request: SubagentRequest | None = None, *, seconds: float = 60
) -> tuple[SubagentResult, str | None, list[object]]:
    """One run through a registry: its result, dispose outcome and every event."""
    registry = registry_for(config)
    events: list[object] = []
    with anyio.fail_after(seconds):
        run = await registry.start(config.provider_name, request or SubagentRequest(prompt="go"))
        async with run:
            async with anyio.create_task_group() as tg:

                async def collect() -> None:
                    async for event in run.events():
                        events.append(event)

                tg.start_soon(collect)
                result = await run.result()
            disposed = await run.dispose()
    return result, disposed, events


@pytest.fixture
def fake_config(workspace: Path) -> MakeConfig:
    """A CodexConfig running the stdlib fake app-server with `scenario`."""
    from subagent_codex.testing import fake_app_server_argv, scenario_env

    def build(scenario: Mapping[str, Any] | None = None, **overrides: Any) -> CodexConfig:
        argv = fake_app_server_argv()
        env: dict[str, str | None] = dict(scenario_env(scenario or {}))
        env.update(overrides.pop("env", {}))
        fields: dict[str, Any] = {
            "command": argv[0],
            "args": argv[1:],
            "cwd": workspace,
            "env": env,
            **TEST_GRACES,
        }
        fields.update(overrides)
        return CodexConfig(**fields)

    return build


FailureLine = Callable[..., str]


def _failure_line(stage: str, category: str, extra: str = "") -> str:
    return f"Subagent failure (provider: codex; stage: {stage}; category: {category}{extra})"


@pytest.fixture
def failure_line() -> FailureLine:
    """The failure line a test expects, spelled out in full (`extra`: the optional fields, such
    as `"; exit code: 3"`), so the assertion reads the exact text a user gets."""
    return _failure_line


CompletedTurn = Callable[..., list[dict[str, object]]]


def _completed_turn(text: str = "done") -> list[dict[str, object]]:
    return [{"message": text, "phase": "final_answer"}, {"complete": "completed"}]


@pytest.fixture
def completed_turn() -> CompletedTurn:
    """The fake's actions that end a turn well: the final answer `text`, then `completed`."""
    return _completed_turn
