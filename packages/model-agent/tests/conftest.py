from __future__ import annotations

import os
from pathlib import Path

import pytest
from model_agent import AgentConfig, ModelEndpoint, PhaseTimeouts
from subagent_core.pytest_fixtures import process_leak_guard as process_leak_guard


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class RecordingSleep:
    """Stands in for the retry wait: records each delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace directory, by its real path (what the agent resolves it to)."""
    root = tmp_path / "ws"
    root.mkdir()
    return Path(os.path.realpath(root))


def make_endpoint(base_url: str, **timeouts: float) -> ModelEndpoint:
    """An endpoint for the scripted server; short phase timeouts where a test asks."""
    return ModelEndpoint(
        base_url=base_url, api_key="test-key", model="scripted", timeouts=PhaseTimeouts(**timeouts)
    )


def make_config(base_url: str, workspace: Path, **options: object) -> AgentConfig:
    return AgentConfig(endpoint=make_endpoint(base_url), workspace=workspace, **options)  # type: ignore[arg-type]


@pytest.fixture
def endpoint_for() -> object:
    return make_endpoint


@pytest.fixture
def config_for(workspace: Path) -> object:
    def build(base_url: str, **options: object) -> AgentConfig:
        return make_config(base_url, workspace, **options)

    return build
