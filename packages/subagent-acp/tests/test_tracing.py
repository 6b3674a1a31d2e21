"""Trace context reaches the ACP child: `_meta.traceparent` on every `session/prompt` names
the run's span (a session turn's own span), so the child's work joins the caller's trace; and
`otel_passthrough` decides which `OTEL_*` settings the child's own exporter gets."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import SessionRequest, SubagentRegistry, SubagentRequest
from subagent_core.testing import recorded_spans, trace_ids

MakeConfig = Callable[..., ACPConfig]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans this test's runs finish (it runs traced)."""
    with recorded_spans() as exporter:
        yield exporter


def _registry(config: ACPConfig) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    return registry


def _seen(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines()


async def test_the_prompt_carries_the_run_span_as_its_traceparent(
    spans: InMemorySpanExporter, make_config: MakeConfig, tmp_path: Path
) -> None:
    seen = tmp_path / "traceparents"
    registry = _registry(make_config({"text": "done", "traceparent_file": str(seen)}))
    with anyio.fail_after(30):
        async with await registry.start("acp", SubagentRequest(prompt="go")) as run:
            assert (await run.result()).output == "done"
    [span] = spans.get_finished_spans()
    [traceparent] = _seen(seen)
    assert trace_ids(traceparent) == (
        f"{span.context.trace_id:032x}",
        f"{span.context.span_id:016x}",
    )
    assert traceparent.endswith("-01")


async def test_an_untraced_prompt_has_no_meta(make_config: MakeConfig, tmp_path: Path) -> None:
    seen = tmp_path / "traceparents"
    registry = _registry(make_config({"text": "done", "traceparent_file": str(seen)}))
    with anyio.fail_after(30):
        async with await registry.start("acp", SubagentRequest(prompt="go")) as run:
            assert (await run.result()).output == "done"
    assert _seen(seen) == ["-"]


async def test_each_session_turn_carries_its_own_span_in_the_session_trace(
    spans: InMemorySpanExporter, make_config: MakeConfig, tmp_path: Path
) -> None:
    seen = tmp_path / "traceparents"
    registry = _registry(make_config({"text": "ok", "traceparent_file": str(seen)}))
    with anyio.fail_after(30):
        async with await registry.open_session("acp", SessionRequest()) as session:
            for prompt in ("one", "two"):
                async with await session.run(prompt) as run:
                    await run.result()
    first, second, whole = spans.get_finished_spans()
    trace_id = f"{whole.context.trace_id:032x}"
    assert [trace_ids(line) for line in _seen(seen)] == [
        (trace_id, f"{first.context.span_id:016x}"),
        (trace_id, f"{second.context.span_id:016x}"),
    ]


OTEL_NAMES = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_SERVICE_NAME",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
]


@pytest.fixture
def parent_otel(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process exports: an endpoint, a service name and credential-shaped headers."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "parent-service")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer parent-secret")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-api=parent-secret")


async def _child_env(config: ACPConfig) -> str:
    with anyio.fail_after(30):
        async with await _registry(config).start("acp", SubagentRequest(prompt="env")) as run:
            return (await run.result()).output


@pytest.mark.usefixtures("parent_otel")
async def test_otel_settings_reach_the_child_only_when_passed_through(
    make_config: MakeConfig,
) -> None:
    script = {"echo_env": OTEL_NAMES}
    assert await _child_env(make_config(script)) == "".join(
        f"{name} unset\n" for name in OTEL_NAMES
    )
    assert await _child_env(make_config(script, otel_passthrough=True)) == (
        "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318\n"
        "OTEL_SERVICE_NAME=parent-service\n"
        "OTEL_EXPORTER_OTLP_HEADERS unset\n"
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS unset\n"
    )
    explicit = {"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer child"}
    output = await _child_env(make_config(script, otel_passthrough=True, env=explicit))
    assert "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer child\n" in output
    assert "OTEL_EXPORTER_OTLP_TRACES_HEADERS unset\n" in output


def test_otel_passthrough_must_be_a_bool(make_config: MakeConfig) -> None:
    with pytest.raises(ValueError, match=r"^ACPConfig\.otel_passthrough must be True or False$"):
        make_config(otel_passthrough="yes")
