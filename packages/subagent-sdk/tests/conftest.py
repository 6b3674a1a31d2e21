from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from subagent_core.pytest_fixtures import process_leak_guard as process_leak_guard
from subagent_sdk import SDKClient, SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript, fake_runtime_argv

CHILDREN = Path(__file__).parent / "children"

# Short graces keep teardown tests quick; they are configuration, not synchronisation.
GRACES = {"eof_grace_seconds": 0.5, "term_grace_seconds": 0.5, "kill_grace_seconds": 1.0}
DISPOSE_GRACES = {
    "dispose_eof_grace_seconds": 0.5,
    "dispose_grace_seconds": 0.5,
    "dispose_kill_grace_seconds": 1.0,
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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
            **DISPOSE_GRACES,
            **config,
        }
        return SDKProvider(SDKConfig(**settings))  # type: ignore[arg-type]

    return make
