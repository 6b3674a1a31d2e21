from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_acp import ACPConfig, ACPProvider
from subagent_acp.testing import fake_child_argv
from subagent_core import SubagentRegistry, SubagentRequest, SubagentResult
from subagent_core.testing.pytest_plugin import TEST_GRACES, process_test_fixtures

anyio_backend, process_leak_guard = process_test_fixtures()

MakeConfig = Callable[..., ACPConfig]


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
            **TEST_GRACES,
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


_FAILURE = (
    r"Subagent failure \(provider: [A-Za-z0-9._-]+; "
    r"stage: (?:initialize|new-session|prompt|process|teardown); "
    r"category: (?:authentication|configuration|transport|protocol|process-exit|process-start|remote-limit|timeout|unknown)"
    r"(?:; stop reason: max_turn_requests)?(?:; exit code: -?\d+)?(?:; signal: SIG[A-Z0-9]+)?\)"
)
_PERMISSION = (
    r"ACP permission \(policy: (?:allow|reject); "
    r"tool kind: (?:read|edit|delete|move|search|execute|think|fetch|switch_mode|other); "
    r"decision: (?:allow_once|allow_always|reject_once|reject_always|cancelled)\)"
)
DIAGNOSTIC = re.compile(rf"(?:{_FAILURE}(?:\n{_PERMISSION})?|{_PERMISSION})")


@pytest.fixture
def in_grammar() -> Callable[[str | None], bool]:
    """True when a diagnostic is absent or matches the closed grammar and the byte bound."""

    def check(text: str | None) -> bool:
        if text is None:
            return True
        return len(text.encode()) <= 4096 and DIAGNOSTIC.fullmatch(text) is not None

    return check


@pytest.fixture
def wait_for_path() -> Callable[[Path], Awaitable[None]]:
    """Waits for a marker file the child writes (bounded by the caller's fail_after)."""

    async def wait(path: Path) -> None:
        # The child is another process: its marker file is the readiness signal we can see.
        marker = anyio.Path(path)
        while not await marker.exists():  # noqa: ASYNC110
            await anyio.sleep(0.01)

    return wait


@pytest.fixture
def run_once(registry_for: Callable[[ACPConfig], SubagentRegistry]):
    """Starts one run through a registry, waits for its result, disposes it."""

    async def run(
        config: ACPConfig, request: SubagentRequest | None = None
    ) -> tuple[SubagentResult, str | None]:
        registry = registry_for(config)
        with anyio.fail_after(60):
            run = await registry.start(
                config.provider_name, request or SubagentRequest(prompt="go")
            )
            async with run:
                result = await run.result()
                disposed = await run.dispose()
        return result, disposed

    return run
