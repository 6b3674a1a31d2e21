"""When the tree is not confirmed gone, the teardown line is reported (dispose / start error).

The managed process really runs its ladder, then reports it unconfirmed: the tree is still
torn down, only the confirmation is withheld.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_core import SubagentRegistry, SubagentRequest, SubagentStartError
from subagent_core.kit import ManagedProcess

TEARDOWN = "Subagent failure (provider: claude; stage: teardown; category: unknown"


@pytest.fixture
def unconfirmed_teardown(monkeypatch: pytest.MonkeyPatch) -> None:
    real = ManagedProcess.terminate

    async def terminate(self: ManagedProcess, *args: float) -> bool:
        await real(self, *args)
        return False

    monkeypatch.setattr(ManagedProcess, "terminate", terminate)


@pytest.mark.usefixtures("unconfirmed_teardown")
async def test_dispose_returns_the_teardown_line(fake_config: Callable[..., ClaudeConfig]) -> None:
    registry = SubagentRegistry()
    registry.register(ClaudeProvider(fake_config()))
    with anyio.fail_after(60):
        run = await registry.start("claude", SubagentRequest(prompt="go"))
        result = await run.result()
        first = await run.dispose()
        second = await run.dispose()
    assert (result.stop_reason, result.diagnostic) == ("completed", None)
    assert first is not None
    assert first.startswith(TEARDOWN)
    assert second == first


@pytest.mark.usefixtures("unconfirmed_teardown")
async def test_a_start_error_appends_the_teardown_line(
    fake_config: Callable[..., ClaudeConfig],
) -> None:
    registry = SubagentRegistry()
    registry.register(ClaudeProvider(fake_config({"refuse_initialize": True})))
    with anyio.fail_after(60), pytest.raises(SubagentStartError) as caught:
        await registry.start("claude", SubagentRequest(prompt="go"))
    diagnostic = caught.value.diagnostic
    assert diagnostic is not None
    first, second = diagnostic.split("\n")
    assert first == "Subagent failure (provider: claude; stage: initialize; category: protocol)"
    assert second.startswith(TEARDOWN)
