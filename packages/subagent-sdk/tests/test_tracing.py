"""`otel_passthrough`: which of this process's `OTEL_*` settings the runtime's own exporter
gets. (The SDK wire has no field for trace context, so none is sent: see AGENTS.md.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from subagent_core import SubagentRequest
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript

Provider = Callable[..., SDKProvider]
NAMES = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS"]


async def _echoed(provider: SDKProvider, cwd: Path) -> list[str]:
    with anyio.fail_after(30):
        async with await provider.start(SubagentRequest(prompt="env", cwd=cwd)) as run:
            return (await run.result()).output.splitlines()


async def test_otel_settings_reach_the_runtime_only_when_passed_through(
    provider: Provider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer parent-secret")
    script = FakeScript(echo_env=NAMES)
    assert await _echoed(provider(script), tmp_path) == [f"{name}=<unset>" for name in NAMES]
    assert await _echoed(provider(script, otel_passthrough=True), tmp_path) == [
        "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318",
        "OTEL_EXPORTER_OTLP_HEADERS=<unset>",
    ]
    explicit = {"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer runtime"}
    given = await _echoed(provider(script, otel_passthrough=True, env=explicit), tmp_path)
    assert given[1] == "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer runtime"


def test_otel_passthrough_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match=r"^SDKConfig\.otel_passthrough must be True or False$"):
        SDKConfig(command="runtime", otel_passthrough="yes")  # type: ignore[arg-type]
