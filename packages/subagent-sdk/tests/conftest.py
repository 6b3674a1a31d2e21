from __future__ import annotations

import gc
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import anyio
import psutil
import pytest
from subagent_core.testing.pytest_plugin import TEST_GRACES, process_test_fixtures
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.client import SDKClient
from subagent_sdk.testing import FakeScript, fake_runtime_argv

anyio_backend, process_leak_guard = process_test_fixtures()

CHILDREN = Path(__file__).parent / "children"

# Short graces keep teardown tests quick; they are configuration, not synchronisation.
GRACES = {"eof_grace_seconds": 0.5, "term_grace_seconds": 0.5, "kill_grace_seconds": 1.0}


@pytest.fixture
def peer(tmp_path: Path) -> Callable[..., SDKClient]:
    """A client over tests/children/peer.py; `record=True` logs its stdin to tmp/peer.log."""

    def make(*, record: bool = False, **options: float) -> SDKClient:
        args = [str(CHILDREN / "peer.py")]
        if record:
            args.append(str(tmp_path / "peer.log"))
        return SDKClient(
            sys.executable, args, **{**GRACES, "shutdown_timeout_seconds": 1.0, **options}
        )  # type: ignore[arg-type]

    return make


@pytest.fixture
def fake_client() -> Callable[..., SDKClient]:
    """A client over the scripted fake runtime."""

    def make(script: FakeScript | None = None, **options: int | float) -> SDKClient:
        argv = fake_runtime_argv(script or FakeScript())
        return SDKClient(argv[0], argv[1:], **{**GRACES, **options})  # type: ignore[arg-type]

    return make


@pytest.fixture
def provider(tmp_path: Path) -> Callable[..., SDKProvider]:
    """An `SDKProvider` over the fake runtime with short graces and cwd = tmp_path."""

    def make(script: FakeScript | None = None, **config: object) -> SDKProvider:
        argv = fake_runtime_argv(script or FakeScript())
        settings: dict[str, object] = {
            "command": argv[0],
            "args": argv[1:],
            "cwd": tmp_path,
            **TEST_GRACES,
            **config,
        }
        return SDKProvider(SDKConfig(**settings))  # type: ignore[arg-type]

    return make


class RSSWatch:
    """The test process's resident set: its size before, and the peak seen while watching."""

    def __init__(self) -> None:
        gc.collect()
        self._process = psutil.Process()
        self.baseline = self._process.memory_info().rss
        self.peak = self.baseline

    def sample(self) -> None:
        self.peak = max(self.peak, self._process.memory_info().rss)

    @property
    def growth(self) -> int:
        """Peak minus baseline, in bytes."""
        self.sample()
        return self.peak - self.baseline


@pytest.fixture
def rss() -> Callable[[], AbstractAsyncContextManager[RSSWatch]]:
    """`async with rss() as watch:` samples this process's RSS every 10 ms inside the block.

    The sampling measures a bound; it never synchronises anything.
    """

    @asynccontextmanager
    async def watch() -> AsyncIterator[RSSWatch]:
        watch = RSSWatch()

        async def sample() -> None:
            while True:
                watch.sample()
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(sample)
            try:
                yield watch
            finally:
                task_group.cancel_scope.cancel()
        watch.sample()

    return watch


@pytest.fixture
def hostile(tmp_path: Path) -> Callable[..., SDKProvider]:
    """An `SDKProvider` over tests/children/hostile_runtime.py in the given mode."""

    def make(mode: str, arg: str = "", **config: object) -> SDKProvider:
        settings: dict[str, object] = {
            "command": sys.executable,
            "args": [str(CHILDREN / "hostile_runtime.py"), mode, arg],
            "cwd": tmp_path,
            **TEST_GRACES,
            **config,
        }
        return SDKProvider(SDKConfig(**settings))  # type: ignore[arg-type]

    return make
