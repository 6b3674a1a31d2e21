from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from subagent_core.testing.pytest_plugin import process_test_fixtures

anyio_backend, process_leak_guard = process_test_fixtures()

CHILDREN = Path(__file__).parent / "children"

ChildArgv = Callable[..., list[str]]


@pytest.fixture
def child() -> ChildArgv:
    """argv for one of the scripted misbehaving children in tests/children/."""

    def argv(name: str, *args: str) -> list[str]:
        return [sys.executable, str(CHILDREN / f"{name}.py"), *args]

    return argv
