"""The shared provider contract (`subagent_core.testing.conformance`) on the fake app-server."""

from __future__ import annotations

from pathlib import Path

from subagent_codex import CodexConfig, CodexProvider
from subagent_codex.testing import fake_app_server_argv, scenario_env
from subagent_core.kit import aborted_before_start_text
from subagent_core.testing.conformance import (
    MISSING_COMMAND,
    ConformanceTarget,
    ProviderConformance,
    Scenario,
)


class CodexTarget(ConformanceTarget):
    aborted_text = aborted_before_start_text("Codex")

    def provider(self, scenario: Scenario, workspace: Path) -> CodexProvider:
        argv = fake_app_server_argv()
        config = CodexConfig(
            command=MISSING_COMMAND if scenario.missing_command else argv[0],
            args=argv[1:],
            cwd=workspace,
            env=scenario_env(scenario.knobs()),
            # Short graces keep teardown checks quick; they never decide an outcome.
            dispose_eof_grace_seconds=0.5,
            dispose_grace_seconds=0.5,
            dispose_kill_grace_seconds=1.0,
            **scenario.deadlines(),
        )
        return CodexProvider(config)


class TestCodexConformance(ProviderConformance):
    target = CodexTarget()
