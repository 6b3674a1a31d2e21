from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_claude._argv import bundled_cli
from subagent_claude.testing import MessagesStub, fake_claude_argv, script_env, stub_env
from subagent_core import SubagentRegistry, SubagentRequest, SubagentResult
from subagent_core.testing.pytest_plugin import TEST_GRACES, process_test_fixtures

anyio_backend, process_leak_guard = process_test_fixtures()

MakeConfig = Callable[..., ClaudeConfig]


@pytest.fixture
def fake_config(tmp_path: Path) -> MakeConfig:
    """A ClaudeConfig running the fake CLI with `script`; extra keywords override fields."""

    def build(script: Mapping[str, Any] | None = None, **overrides: Any) -> ClaudeConfig:
        argv = fake_claude_argv()
        env: dict[str, str | None] = dict(overrides.pop("env", {}))
        env.update(script_env(script or {}))
        fields: dict[str, Any] = {
            "command": argv[0],
            "args": argv[1:],
            "cwd": tmp_path,
            "env": env,
            **TEST_GRACES,
        }
        fields.update(overrides)
        return ClaudeConfig(**fields)

    return build


def find_real_cli() -> str | None:
    """The real CLI: the `[cli]` extra's bundled binary, else `claude` on PATH."""
    bundled = bundled_cli()
    return str(bundled) if bundled is not None else shutil.which("claude")


async def _run_once(
    config: ClaudeConfig,
    request: SubagentRequest | None = None,
    *,
    events: list[Any] | None = None,
    seconds: float = 60,
) -> tuple[SubagentResult, str | None]:
    """Starts one run through a registry, collects its events, waits, disposes."""
    registry = SubagentRegistry()
    registry.register(ClaudeProvider(config))
    with anyio.fail_after(seconds):
        run = await registry.start(config.provider_name, request or SubagentRequest(prompt="go"))
        async with run:
            if events is not None:
                async for event in run.events():
                    events.append(event)
            result = await run.result()
            disposed = await run.dispose()
    return result, disposed


_FAILURE = (
    r"Subagent failure \(provider: [A-Za-z0-9._-]+; "
    r"stage: (?:initialize|prompt|process|teardown); "
    r"category: (?:authentication|configuration|transport|protocol|process-exit|process-start"
    r"|remote-limit|upstream|output-schema|timeout|unknown)"
    r"(?:; stop reason: (?:error_max_turns|error_max_budget_usd|aborted))?"
    r"(?:; exit code: -?\d+)?(?:; signal: SIG[A-Z0-9]+)?\)"
)
_PERMISSION = (
    r"Claude permission \(policy: (?:allow|reject|ask); "
    r"tool kind: (?:read|edit|delete|move|search|execute|think|fetch|switch_mode|other); "
    r"decision: (?:allow_once|allow_always|reject_once|reject_always|cancelled)\)"
)
DIAGNOSTIC = re.compile(rf"(?:{_FAILURE}(?:\n{_PERMISSION})?|{_PERMISSION})")


def _in_grammar(text: str | None) -> bool:
    return text is None or (len(text.encode()) <= 4096 and DIAGNOSTIC.fullmatch(text) is not None)


@pytest.fixture
def in_grammar() -> Callable[[str | None], bool]:
    """True when a diagnostic is absent or matches the closed grammar and the byte bound."""
    return _in_grammar


@pytest.fixture
def run_once() -> Callable[..., Any]:
    """`await run_once(config, request=None, events=None, seconds=60) -> (result, disposed)`."""
    return _run_once


@pytest.fixture
def real_cli() -> str:
    """The real CLI's path; the test skips (with the reason) when it is not installed."""
    found = find_real_cli()
    if found is None:
        pytest.skip("the real Claude Code CLI is not installed (subagent-claude[cli])")
    return found


@pytest.fixture
def real_config(real_cli: str, tmp_path: Path) -> Callable[..., ClaudeConfig]:
    """A ClaudeConfig running the real CLI against `stub` with a throwaway HOME and config
    dir; `key=None` gives the child no key at all; extra keywords override fields."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()

    def build(
        stub: MessagesStub, *, key: str | None = "sk-stub-dummy", **overrides: Any
    ) -> ClaudeConfig:
        env: dict[str, str | None] = {**stub_env(stub, tmp_path / "home", key=key)}
        env.update(overrides.pop("env", {}))
        fields: dict[str, Any] = {"command": real_cli, "cwd": workspace, "env": env, **TEST_GRACES}
        fields.update(overrides)
        return ClaudeConfig(**fields)

    return build
