"""The suite as pytest collects it: one parametrised test a provider's tests inherit."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Final

import anyio
import pytest

from ._checks import CHECKS, Check
from ._target import ConformanceTarget

CHECK_SECONDS: Final = 90.0
"""The bound on one check, its teardowns included."""


class ProviderConformance:
    """Subclass it as `Test<Provider>Conformance` with `target = <YourTarget>()`.

    Each check becomes one test, `test_conformance[<check name>]`; a check the target lists in
    `skips` is skipped with the target's reason. Process tests need the conftest's
    `process_leak_guard` and an `anyio_backend` of `asyncio`, as every test here does.
    """

    target: ClassVar[ConformanceTarget]

    @pytest.mark.parametrize("check", CHECKS, ids=[check.name for check in CHECKS])
    async def test_conformance(self, check: Check, tmp_path: Path) -> None:
        """Runs one check against the target's fake."""
        reason = self.target.skips.get(check.name)
        if reason is not None:
            pytest.skip(reason)
        with anyio.fail_after(CHECK_SECONDS):
            await check.run(self.target, tmp_path)
