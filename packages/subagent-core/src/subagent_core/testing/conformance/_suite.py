"""The suite as pytest collects it: one parametrised test a provider's tests inherit."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Final

import anyio
import pytest

from ._checks import RUN_CHECKS, Check
from ._sessions import SESSION_CHECKS
from ._target import ConformanceTarget, Scenario

CHECK_SECONDS: Final = 90.0
"""The bound on one check, its teardowns included."""

CHECKS: Final[tuple[Check, ...]] = (*RUN_CHECKS, *SESSION_CHECKS)
"""Every check, in the order the suite runs them: a one-shot run's, then a session's."""

NO_SESSIONS: Final = "the provider keeps no sessions (Capabilities.sessions is false)"
"""Why a session check is skipped for a provider without sessions."""


async def has_sessions(target: ConformanceTarget, workspace: Path) -> bool:
    """Whether the target's provider declares `Capabilities.sessions`."""
    async with target.open_provider(Scenario(), workspace) as provider:
        return provider.capabilities.sessions


class ProviderConformance:
    """Subclass it as `Test<Provider>Conformance` with `target = <YourTarget>()`.

    Each check becomes one test, `test_conformance[<check name>]`; a check the target lists in
    `skips` is skipped with the target's reason, and so is a session check for a provider
    without `Capabilities.sessions`. Process tests need the conftest's `process_leak_guard`
    and an `anyio_backend` of `asyncio`, as every test here does.
    """

    target: ClassVar[ConformanceTarget]

    @pytest.mark.parametrize("check", CHECKS, ids=[check.name for check in CHECKS])
    async def test_conformance(self, check: Check, tmp_path: Path) -> None:
        """Runs one check against the target's fake."""
        reason = self.target.skips.get(check.name)
        if reason is None and check.sessions and not await has_sessions(self.target, tmp_path):
            reason = NO_SESSIONS
        if reason is not None:
            pytest.skip(reason)
        with anyio.fail_after(CHECK_SECONDS):
            await check.run(self.target, tmp_path)
