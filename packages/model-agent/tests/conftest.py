from __future__ import annotations

import gc
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio
import psutil
import pytest
from model_agent import AgentConfig, ModelEndpoint, PhaseTimeouts
from model_agent import _model_client as model_client_module
from subagent_core.testing.pytest_plugin import process_test_fixtures

anyio_backend, process_leak_guard = process_test_fixtures()

T = TypeVar("T")


class RecordingSleep:
    """Stands in for the retry wait: records each delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def sleep(monkeypatch: pytest.MonkeyPatch) -> RecordingSleep:
    """Every retry wait of the test is recorded and returns at once."""
    recording = RecordingSleep()
    monkeypatch.setattr(model_client_module, "_backoff", recording)
    return recording


class ProcessStates(Sequence[str]):
    """The states `process_execute` calls entered, read live from its DEBUG log."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self._caplog = caplog

    def __eq__(self, other: object) -> bool:
        return self.states == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.states)

    def __len__(self) -> int:
        return len(self.states)

    def __getitem__(self, index: int) -> str:  # type: ignore[override]
        return self.states[index]

    @property
    def states(self) -> list[str]:
        return [
            str(record.args[0])  # type: ignore[index]
            for record in self._caplog.records
            if record.name == "model_agent.process" and record.msg == "process_execute state: %s"
        ]


@pytest.fixture
def process_states(caplog: pytest.LogCaptureFixture) -> ProcessStates:
    """Records the states of every `process_execute` call of the test, in order."""
    caplog.set_level(logging.DEBUG, logger="model_agent.process")
    return ProcessStates(caplog)


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


async def peak_rss_growth(work: Callable[[], Awaitable[T]]) -> tuple[T, int]:
    """Runs `work` while sampling this process's RSS; returns its result and the peak growth."""
    process = psutil.Process()
    gc.collect()
    base = process.memory_info().rss
    peak = base
    finished = anyio.Event()

    async def sample() -> None:
        nonlocal peak
        while not finished.is_set():
            peak = max(peak, process.memory_info().rss)
            with anyio.move_on_after(0.005):
                await finished.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(sample)
        try:
            result = await work()
        finally:
            finished.set()
    return result, max(peak, process.memory_info().rss) - base


@pytest.fixture
def with_peak_rss_growth() -> Callable[..., Awaitable[tuple[Any, int]]]:
    """`await with_peak_rss_growth(work)` → (work's result, peak RSS growth in bytes)."""
    return peak_rss_growth
