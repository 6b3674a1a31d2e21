"""When the tree is not confirmed gone, the teardown line is reported (dispose / start error).

No real process here can outlive SIGKILL, so the managed process is made to *report* a failed
ladder after really running it: the tree is still torn down, only the confirmation is withheld.
"""

from __future__ import annotations

import anyio
import pytest
from subagent_acp import ACPProvider
from subagent_core import CancelSignal, SubagentRegistry, SubagentRequest, SubagentStartError
from subagent_core.kit import ManagedProcess


@pytest.fixture
def unconfirmed_teardown(monkeypatch: pytest.MonkeyPatch) -> None:
    real = ManagedProcess.terminate

    async def terminate(self: ManagedProcess, *args: float) -> bool:
        await real(self, *args)
        return False

    monkeypatch.setattr(ManagedProcess, "terminate", terminate)


def registry_with(config) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    return registry


@pytest.mark.usefixtures("unconfirmed_teardown")
async def test_dispose_returns_the_teardown_line(make_config) -> None:
    registry = registry_with(make_config({"text": "done"}))
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        result = await run.result()
        first = await run.dispose()
        second = await run.dispose()
    expected = "Subagent failure (provider: acp; stage: teardown; category: unknown; exit code: 0)"
    assert (first, second) == (expected, expected)
    assert result.diagnostic is None


@pytest.mark.parametrize(
    ("script", "figure"),
    [
        ({}, "exit code: 0"),  # exits on stdin EOF
        ({"ignore_eof": True}, "signal: SIGTERM"),
        ({"ignore_eof": True, "trap_sigterm": True}, "signal: SIGKILL"),
    ],
    ids=["eof", "sigterm", "sigkill"],
)
@pytest.mark.usefixtures("unconfirmed_teardown")
async def test_the_ladder_step_that_ended_the_child(make_config, script, figure: str) -> None:
    # The teardown line carries the observed outcome: which rung of the ladder ended the child.
    registry = registry_with(make_config({"text": "done", **script}))
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        await run.result()
        disposed = await run.dispose()
    assert (
        disposed
        == f"Subagent failure (provider: acp; stage: teardown; category: unknown; {figure})"
    )


@pytest.mark.usefixtures("unconfirmed_teardown")
async def test_start_error_appends_the_teardown_line(make_config) -> None:
    registry = registry_with(make_config({"omit_session_id": True}))
    with anyio.fail_after(60), pytest.raises(SubagentStartError) as caught:
        await registry.start("acp", SubagentRequest(prompt="go"))
    expected = (
        "Subagent failure (provider: acp; stage: new-session; category: protocol)\n"
        "Subagent failure (provider: acp; stage: teardown; category: unknown; exit code: 0)"
    )
    assert (str(caught.value), caught.value.diagnostic) == (expected, expected)


@pytest.mark.usefixtures("unconfirmed_teardown")
async def test_cancelled_start_with_failed_cleanup_reports_only_teardown(
    make_config, tmp_path, wait_for_path
) -> None:
    marker = tmp_path / "in-initialize"
    script = {"hang_at": "initialize", "markers": [{"at": "initialize", "path": str(marker)}]}
    registry = registry_with(make_config(script))
    cancel = CancelSignal()
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:

            async def cancel_when_ready() -> None:
                await wait_for_path(marker)
                cancel.cancel()

            tg.start_soon(cancel_when_ready)
            with pytest.raises(SubagentStartError) as caught:
                await registry.start("acp", SubagentRequest(prompt="go", cancel=cancel))
    expected = "Subagent failure (provider: acp; stage: teardown; category: unknown; exit code: 0)"
    assert (str(caught.value), caught.value.diagnostic) == (expected, expected)
