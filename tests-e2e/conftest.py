"""Shared fixtures of the end-to-end suite: leak guard, asyncio, a scripted model per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from model_agent.testing import ScriptedModelServer, open_scripted_model_server
from subagent_core.pytest_fixtures import process_leak_guard as process_leak_guard

ModelFactory = Callable[
    [Sequence[dict[str, Any]]], AbstractAsyncContextManager[ScriptedModelServer]
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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
