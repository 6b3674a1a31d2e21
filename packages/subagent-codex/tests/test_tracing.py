"""The caller's trace reaches codex: `thread/start` and `turn/start` carry the run span's W3C
context in the request's `trace` field, and the real binary parents its own spans for the turn
to it. Whether its model requests carry it on (the `traceparent` the loopback stub records)
depends on codex's own tracing, measured here on the real binary: with its trace exporter
configured (`otel.trace_exporter`) they carry our trace id; without it codex makes no spans and
sends no `traceparent` at all."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from subagent_codex import CodexConfig, CodexProvider
from subagent_codex.testing import ResponsesStub
from subagent_core import SubagentRegistry, SubagentRequest
from subagent_core.testing import OTLPReceiver, recorded_spans, trace_ids

MakeConfig = Callable[..., CodexConfig]
StubFactory = Callable[[list[Mapping[str, Any]]], ResponsesStub]


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans this test's runs finish (it runs traced)."""
    with recorded_spans() as exporter:
        yield exporter


def _exporter(receiver: OTLPReceiver) -> dict[str, str]:
    """`config_overrides` that give codex its own OTLP/HTTP trace exporter, to `receiver`."""
    endpoint = f"{receiver.endpoint}/v1/traces"
    return {
        "otel.trace_exporter": f'{{ otlp-http = {{ endpoint = "{endpoint}", '
        'protocol = "binary" } }'
    }


async def _run(config: CodexConfig) -> str:
    registry = SubagentRegistry()
    registry.register(CodexProvider(config))
    with anyio.fail_after(90):
        async with await registry.start(
            config.provider_name, SubagentRequest(prompt="ping")
        ) as run:
            return (await run.result()).output


async def test_with_its_own_exporter_codex_carries_the_run_trace_to_the_model(
    spans: InMemorySpanExporter, stub_factory: StubFactory, stub_config: MakeConfig
) -> None:
    stub = stub_factory([{"text": "PONG"}])
    with OTLPReceiver() as receiver:
        base = stub_config(stub)
        overrides = {**base.config_overrides, **_exporter(receiver)}
        # Codex exports its spans as it exits on EOF: a signal before that loses them, so it
        # gets the time to exit on its own (a bound: dispose returns as soon as it has).
        config = stub_config(stub, config_overrides=overrides, dispose_eof_grace_seconds=30.0)
        assert await _run(config) == "PONG"
        [span] = spans.get_finished_spans()
        ours = (f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}")
        # The app-server's span for our `turn/start` hangs under the run span, remotely.
        [turn_start] = await anyio.to_thread.run_sync(receiver.wait_for, "turn/start")
    assert (turn_start.trace_id, turn_start.parent_span_id) == ours
    [sent] = stub.traceparents
    found = trace_ids(sent)
    assert found is not None
    trace_id, parent = found
    assert trace_id == ours[0]
    # The model request's parent is a span of codex's own, in our trace.
    assert parent in {item.span_id for item in receiver.spans if item.trace_id == trace_id}


async def test_without_its_own_exporter_codex_sends_the_model_no_trace_context(
    spans: InMemorySpanExporter, stub_factory: StubFactory, stub_config: MakeConfig
) -> None:
    stub = stub_factory([{"text": "PONG"}])
    assert await _run(stub_config(stub)) == "PONG"
    assert len(spans.get_finished_spans()) == 1
    assert stub.traceparents == [None]


OTEL = {
    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
    "OTEL_SERVICE_NAME": "parent-service",
    "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer parent-secret",
}


async def _child_env(fake_config: MakeConfig, dump: Path, **overrides: Any) -> dict[str, str]:
    scenario = {"turn": [{"env_to": str(dump)}, {"message": "done"}, {"complete": "completed"}]}
    assert await _run(fake_config(scenario, **overrides)) == "done"
    return _otel_of(dump)


def _otel_of(dump: Path) -> dict[str, str]:
    """The `OTEL_*` entries of the environment the fake wrote."""
    env: dict[str, str] = json.loads(dump.read_text("utf-8"))
    return {name: value for name, value in env.items() if name.startswith("OTEL_")}


async def test_otel_settings_reach_the_child_only_when_passed_through(
    fake_config: MakeConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in OTEL.items():
        monkeypatch.setenv(name, value)
    dump = tmp_path / "env.json"
    assert await _child_env(fake_config, dump) == {}
    assert await _child_env(fake_config, dump, otel_passthrough=True) == {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
        "OTEL_SERVICE_NAME": "parent-service",
    }
    explicit = {"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer child"}
    passed = await _child_env(fake_config, dump, otel_passthrough=True, env=explicit)
    assert passed["OTEL_EXPORTER_OTLP_HEADERS"] == "authorization=Bearer child"


def test_otel_passthrough_must_be_a_bool(fake_config: MakeConfig) -> None:
    with pytest.raises(ValueError, match=r"^CodexConfig\.otel_passthrough must be True or False$"):
        fake_config(otel_passthrough=1)
