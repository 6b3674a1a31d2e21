"""The shared provider contract (`subagent_core.testing.conformance`) on the fake ACP child."""

from __future__ import annotations

from pathlib import Path

from subagent_acp import ACPConfig, ACPProvider
from subagent_acp.testing import fake_child_argv, script_env
from subagent_core.kit import aborted_before_start_text
from subagent_core.testing.conformance import (
    MISSING_COMMAND,
    ConformanceTarget,
    ProviderConformance,
    Scenario,
)


class ACPTarget(ConformanceTarget):
    aborted_text = aborted_before_start_text("ACP")

    def provider(self, scenario: Scenario, workspace: Path) -> ACPProvider:
        argv = fake_child_argv()
        config = ACPConfig(
            command=MISSING_COMMAND if scenario.missing_command else argv[0],
            args=argv[1:],
            cwd=workspace,
            env=script_env(scenario.knobs()),
            # Short graces keep teardown checks quick; they never decide an outcome.
            dispose_eof_grace_seconds=0.5,
            dispose_grace_seconds=0.5,
            dispose_kill_grace_seconds=1.0,
            **scenario.deadlines(),
        )
        return ACPProvider(config)


class TestACPConformance(ProviderConformance):
    target = ACPTarget()
