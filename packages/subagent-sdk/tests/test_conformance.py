"""The shared provider contract (`subagent_core.testing.conformance`) on the fake runtime."""

from __future__ import annotations

from pathlib import Path

from subagent_core.kit import aborted_before_start_text
from subagent_core.testing.conformance import (
    MISSING_COMMAND,
    ConformanceTarget,
    Diagnostics,
    ProviderConformance,
    Scenario,
)
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript, fake_runtime_argv


class SDKTarget(ConformanceTarget):
    aborted_text = aborted_before_start_text("SDK")
    # sdk.md: the turn is `session-run`, and a child that cannot be spawned or that exits
    # before answering `initialize` is a `transport` failure of `initialize` (one that exits
    # later, a `transport` failure of `session-run`).
    diagnostics = Diagnostics(
        turn_stage="session-run",
        spawn_stage="initialize",
        spawn_category="transport",
        exit_category="transport",
        exit_stage="session-run",
    )
    # The `shutdown` request's bound comes before the ladder's graces.
    teardown_seconds = 2.5

    def provider(self, scenario: Scenario, workspace: Path) -> SDKProvider:
        argv = fake_runtime_argv(FakeScript(**scenario.knobs()))  # type: ignore[arg-type]
        config = SDKConfig(
            command=MISSING_COMMAND if scenario.missing_command else argv[0],
            args=argv[1:],
            cwd=workspace,
            # Short graces keep teardown checks quick; they never decide an outcome.
            dispose_eof_grace_seconds=0.5,
            dispose_grace_seconds=0.5,
            dispose_kill_grace_seconds=1.0,
            **scenario.deadlines(),
        )
        return SDKProvider(config)


class TestSDKConformance(ProviderConformance):
    target = SDKTarget()
