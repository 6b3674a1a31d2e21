"""The provider conformance suite: every promise a provider makes, asserted once, run by each.

A provider's `tests/test_conformance.py` declares how to build its provider over its fake and
inherits the suite::

    from subagent_core.testing.conformance import ConformanceTarget, ProviderConformance, Scenario

    class MyTarget(ConformanceTarget):
        aborted_text = aborted_before_start_text("ACP")

        def provider(self, scenario: Scenario, workspace: Path) -> SubagentProvider:
            command = MISSING_COMMAND if scenario.missing_command else FAKE_ARGV[0]
            return MyProvider(MyConfig(command=command, cwd=workspace,
                env=my_script_env(scenario.knobs()), **scenario.deadlines()))

    class TestMyConformance(ProviderConformance):
        target = MyTarget()

The fake reads the shared knobs under these names (`Scenario` documents each): `text`,
`echo_prompt`, `hang_at` (`"handshake"` / `"turn"`), `exit_code`, `ignore_eof`, `trap_term`,
`grandchild_holds_stdout`, `setsid_escapee`, `flood`. Where a provider legitimately names a
failure otherwise, its target's `Diagnostics` says so; a check that cannot apply (an in-process
provider has no child to kill) is listed in `skips` with the reason. When every check passes,
the provider keeps the shared contract: pre-cancel spawns nothing, a cancelled or failed start
rolls back, both deadlines, the handshake exit and missing command lines, local cancel and
dispose, hostile trees ended, a SIGKILLed parent leaves nothing, concurrent runs isolated; and,
with `Capabilities.sessions` (else those checks skip), the same for a session's turns: three
turns on one child with exact output and summed usage, a cancelled or disposed turn leaves the
child usable, one turn at a time, a child killed between turns makes the next turn a classified
failure, `aclose()` and a SIGKILLed parent leave nothing.

`CHECKS` lists them (`RUN_CHECKS`, then `SESSION_CHECKS`), each callable alone
(`await check.run(target, workspace)` raises `AssertionError` on a broken promise). This module
imports pytest; `subagent_core.testing` does not.
"""

from ._checks import RUN_CHECKS as RUN_CHECKS
from ._checks import Check as Check
from ._sessions import SESSION_CHECKS as SESSION_CHECKS
from ._suite import CHECKS as CHECKS
from ._suite import ProviderConformance as ProviderConformance
from ._target import MISSING_COMMAND as MISSING_COMMAND
from ._target import CheckName as CheckName
from ._target import ConformanceTarget as ConformanceTarget
from ._target import Diagnostics as Diagnostics
from ._target import HangAt as HangAt
from ._target import HostMode as HostMode
from ._target import Scenario as Scenario

__all__ = [
    "CHECKS",
    "MISSING_COMMAND",
    "RUN_CHECKS",
    "SESSION_CHECKS",
    "Check",
    "CheckName",
    "ConformanceTarget",
    "Diagnostics",
    "HangAt",
    "HostMode",
    "ProviderConformance",
    "Scenario",
]
