from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings
from subagent_core.testing.pytest_fixtures import process_leak_guard as process_leak_guard

# A loaded machine runs examples slowly: no per-example deadline (every test has its own bound).
settings.register_profile("loaded", deadline=None)
settings.load_profile("loaded")

CHILDREN = Path(__file__).parent / "children"

ChildArgv = Callable[..., list[str]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def child() -> ChildArgv:
    """argv for one of the scripted misbehaving children in tests/children/."""

    def argv(name: str, *args: str) -> list[str]:
        return [sys.executable, str(CHILDREN / f"{name}.py"), *args]

    return argv
