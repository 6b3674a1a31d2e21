from __future__ import annotations

import pytest
from subagent_core.pytest_fixtures import process_leak_guard as process_leak_guard


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
