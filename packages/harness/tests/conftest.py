from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from subagent_core.pytest_fixtures import process_leak_guard as process_leak_guard


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def wait_for_pid() -> Callable[[Path], Awaitable[int]]:
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
