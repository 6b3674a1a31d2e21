from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from subagent_acp import ACPConfig, ACPProvider
from subagent_acp.testing import fake_child_argv
from subagent_core import SubagentRegistry
from subagent_core.pytest_fixtures import process_leak_guard as process_leak_guard

# Short graces keep teardown tests quick; they never decide an outcome by timing.
GRACES: dict[str, Any] = {
    "dispose_eof_grace_seconds": 0.5,
    "dispose_grace_seconds": 0.5,
    "dispose_kill_grace_seconds": 1.0,
}

MakeConfig = Callable[..., ACPConfig]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def make_config(tmp_path: Path) -> MakeConfig:
    """An ACPConfig running the fake child with `script`; extra keywords override fields."""

    def build(script: Mapping[str, Any] | None = None, **overrides: Any) -> ACPConfig:
        argv = fake_child_argv()
        env: dict[str, str | None] = dict(overrides.pop("env", {}))
        env["ACP_FAKE_SCRIPT"] = json.dumps(dict(script or {}))
        fields: dict[str, Any] = {
            "command": argv[0],
            "args": argv[1:],
            "cwd": tmp_path,
            "env": env,
            **GRACES,
        }
        fields.update(overrides)
        return ACPConfig(**fields)

    return build


@pytest.fixture
def registry_for() -> Callable[[ACPConfig], SubagentRegistry]:
    def build(config: ACPConfig) -> SubagentRegistry:
        registry = SubagentRegistry()
        registry.register(ACPProvider(config))
        return registry

    return build
