"""Shared fixtures of the end-to-end suite: leak guard, asyncio, a scripted model per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from model_agent.testing import ScriptedModelServer, open_scripted_model_server
from subagent_core.testing.pytest_plugin import process_test_fixtures

anyio_backend, process_leak_guard = process_test_fixtures()

ModelFactory = Callable[
    [Sequence[dict[str, Any]]], AbstractAsyncContextManager[ScriptedModelServer]
]


@pytest.fixture
def scripted_model() -> ModelFactory:
    """Opens a scripted model server with the given rules."""

    @asynccontextmanager
    async def open_model(rules: Sequence[dict[str, Any]]) -> AsyncIterator[ScriptedModelServer]:
        async with open_scripted_model_server({"rules": list(rules)}) as server:
            yield server

    return open_model


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path.resolve()


PidWaiter = Callable[[Path], Awaitable[int]]


@pytest.fixture
def wait_for_pid() -> PidWaiter:
    """Waits until a command has written its pid (`echo $$ > FILE; exec …`) and returns it."""

    async def wait(path: Path) -> int:
        marker = anyio.Path(path)
        # Another process writes the file: there is no in-process event to wait on.
        while True:
            if await marker.exists():
                text = (await marker.read_text(encoding="utf-8")).strip()
                if text:
                    return int(text)
            await anyio.sleep(0.02)

    return wait


@pytest.fixture
def process_gone() -> Callable[[int], bool]:
    """True when `pid` no longer runs (a zombie awaiting its reaper counts as gone)."""

    def gone(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    return gone
