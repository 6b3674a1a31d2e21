"""When the tree is not confirmed gone, the `stage: shutdown` line is reported.

No real process here can outlive SIGKILL, so the managed process is made to *report* a failed
ladder after really running it: the tree is still torn down, only the confirmation is withheld.
The line goes to `dispose()` (memoized) or is appended to a start error per core.md.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from subagent_core import CancelSignal, SubagentRequest, SubagentResult, SubagentStartError
from subagent_core.kit import ManagedProcess
from subagent_sdk import SDKProvider
from subagent_sdk.testing import FakeScript

Provider = Callable[..., SDKProvider]


def line(stage: str, category: str, tail: str = "") -> str:
    return f"Subagent failure (provider: dsh-sdk; stage: {stage}; category: {category}{tail})"


@pytest.fixture
def unconfirmed_shutdown(monkeypatch: pytest.MonkeyPatch) -> None:
    real = ManagedProcess.terminate

    async def terminate(self: ManagedProcess, *args: float) -> bool:
        await real(self, *args)
        return False

    monkeypatch.setattr(ManagedProcess, "terminate", terminate)


async def start_error(provider: SDKProvider, request: SubagentRequest) -> SubagentStartError:
    with anyio.fail_after(30), pytest.raises(SubagentStartError) as caught:
        await provider.start(request)
    return caught.value


@pytest.mark.usefixtures("unconfirmed_shutdown")
async def test_dispose_returns_the_shutdown_line_every_time(
    provider: Provider, tmp_path: Path
) -> None:
    with anyio.fail_after(30):
        run = await provider(FakeScript(text="done")).start(
            SubagentRequest(prompt="p", cwd=tmp_path)
        )
        result = await run.result()
        first = await run.dispose()
        second = await run.dispose()
    # The runtime answered `shutdown` and exited 0; only the ladder's confirmation is missing.
    expected = line("shutdown", "unknown", "; exit code: 0")
    assert (first, second) == (expected, expected)
    assert result == SubagentResult(stop_reason="completed", output="done")


@pytest.mark.usefixtures("unconfirmed_shutdown")
async def test_start_failure_with_failed_cleanup_is_startup_line_then_shutdown_line(
    provider: Provider, tmp_path: Path
) -> None:
    request = SubagentRequest(prompt="p", cwd=tmp_path)
    error = await start_error(provider(FakeScript(initialize_error={"message": "no"})), request)
    expected = line("initialize", "protocol") + "\n" + line("shutdown", "unknown", "; exit code: 0")
    assert (str(error), error.diagnostic) == (expected, expected)

    error = await start_error(provider(FakeScript(exit_before_initialize=3)), request)
    expected = (
        line("initialize", "transport", "; exit code: 3")
        + "\n"
        + line("shutdown", "unknown", "; exit code: 3")
    )
    assert (str(error), error.diagnostic) == (expected, expected)


@pytest.mark.usefixtures("unconfirmed_shutdown")
async def test_cancelled_start_with_failed_cleanup_reports_only_the_shutdown_line(
    provider: Provider, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    sdk = provider(FakeScript(hang_at="initialize", ready_file=str(ready)))
    cancel = CancelSignal()
    errors: list[SubagentStartError] = []

    async def start() -> None:
        errors.append(
            await start_error(sdk, SubagentRequest(prompt="p", cwd=tmp_path, cancel=cancel))
        )

    async def cancel_when_ready() -> None:
        # The fake writes its marker file at the hang point; poll it (bounded by fail_after).
        while not await anyio.Path(ready).exists():  # noqa: ASYNC110
            await anyio.sleep(0.01)
        cancel.cancel()

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(start)
            tg.start_soon(cancel_when_ready)
    expected = line("shutdown", "unknown", "; exit code: 0")
    assert (str(errors[0]), errors[0].diagnostic) == (expected, expected)
