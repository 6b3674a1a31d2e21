from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from subagent_core.testing.pytest_plugin import process_test_fixtures

anyio_backend, process_leak_guard = process_test_fixtures()


@pytest.fixture(autouse=True)
def no_user_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A private, empty user config directory: a developer's own harness.toml never leaks in."""
    home = tmp_path_factory.mktemp("xdg-config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


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
