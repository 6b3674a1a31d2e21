"""The caller's trace reaches Claude Code through `TRACEPARENT`, the variable its CLI continues
a trace from, set at spawn to the span current then (the run's; a session's for all its turns).

What the real CLI does with it, measured against the loopback Messages stub and an OTLP
receiver: nothing while its own tracing is off (no span, no header); with its session tracing
on (`CLAUDE_CODE_ENABLE_TELEMETRY` + `CLAUDE_CODE_ENHANCED_TELEMETRY_BETA` and an OTLP traces
exporter, whose `OTEL_*` settings `otel_passthrough` hands it) each turn's
`claude_code.interaction` span is a child of ours; with `CLAUDE_CODE_PROPAGATE_TRACEPARENT` as
well its model requests carry our trace id in a `traceparent` header."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_claude.testing import MessagesStub, text_turn
from subagent_core import SessionRequest, SubagentRegistry, SubagentRequest
from subagent_core.testing import OTLPReceiver, recorded_spans, trace_ids

MakeConfig = Callable[..., ClaudeConfig]

CLI_TRACING = {"CLAUDE_CODE_ENABLE_TELEMETRY": "1", "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1"}
"""What turns the CLI's own session tracing on (its exporter comes from `OTEL_*`)."""

PARENT_SECRET = "parent-otlp-secret-5e1"


FLUSHED = {"dispose_eof_grace_seconds": 30.0}
"""The CLI exports its spans as it exits on EOF: a signal before that loses them, so it gets
the time to exit on its own (a bound: dispose returns as soon as it has)."""


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans this test's runs finish (it runs traced)."""
    with recorded_spans() as exporter:
        yield exporter


def _registry(config: ClaudeConfig) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(ClaudeProvider(config))
    return registry


async def _output(config: ClaudeConfig) -> str:
    with anyio.fail_after(60):
        async with await _registry(config).start("claude", SubagentRequest(prompt="go")) as run:
            return (await run.result()).output


def _ids(span: Any) -> tuple[str, str]:
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


@pytest.fixture
def parent_exports(monkeypatch: pytest.MonkeyPatch) -> Callable[[OTLPReceiver], None]:
    """Makes this process's `OTEL_*` settings an OTLP/HTTP exporter to `receiver`, with a
    credential in its headers variable."""

    def point(receiver: OTLPReceiver) -> None:
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"x-parent-secret={PARENT_SECRET}")

    return point


async def test_the_child_gets_the_run_span_as_traceparent(
    spans: InMemorySpanExporter, fake_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACESTATE", "vendor=another-context")
    output = await _output(fake_config({"echo_env": ["TRACEPARENT", "TRACESTATE"]}))
    [span] = spans.get_finished_spans()
    trace_id, span_id = _ids(span)
    assert json.loads(output) == {"TRACEPARENT": f"00-{trace_id}-{span_id}-01", "TRACESTATE": None}


async def test_a_session_process_keeps_the_session_span_for_every_turn(
    spans: InMemorySpanExporter,
    fake_config: MakeConfig,
) -> None:
    registry = _registry(fake_config({"echo_env": ["TRACEPARENT"]}))
    outputs: list[str] = []
    with anyio.fail_after(60):
        async with await registry.open_session("claude", SessionRequest()) as session:
            for prompt in ("one", "two"):
                async with await session.run(prompt) as run:
                    outputs.append((await run.result()).output)
    *_, whole = spans.get_finished_spans()
    trace_id, span_id = _ids(whole)
    assert [json.loads(text) for text in outputs] == [
        {"TRACEPARENT": f"00-{trace_id}-{span_id}-01"}
    ] * 2


@pytest.mark.usefixtures("spans")
async def test_an_explicit_env_entry_wins_over_the_trace_context(fake_config: MakeConfig) -> None:
    config = fake_config({"echo_env": ["TRACEPARENT"]}, env={"TRACEPARENT": None})
    assert json.loads(await _output(config)) == {"TRACEPARENT": None}


async def test_otel_settings_reach_the_child_only_when_passed_through(
    fake_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS"]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"x-parent-secret={PARENT_SECRET}")
    script = {"echo_env": names}
    assert json.loads(await _output(fake_config(script))) == dict.fromkeys(names)
    passed = json.loads(await _output(fake_config(script, otel_passthrough=True)))
    assert passed == {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", names[1]: None}
    explicit = {"OTEL_EXPORTER_OTLP_HEADERS": "x-child=1"}
    given = json.loads(await _output(fake_config(script, otel_passthrough=True, env=explicit)))
    assert given[names[1]] == "x-child=1"


def test_otel_passthrough_must_be_a_bool(fake_config: MakeConfig) -> None:
    with pytest.raises(ValueError, match=r"^ClaudeConfig\.otel_passthrough must be True or False$"):
        fake_config(otel_passthrough="no")


# -- the real CLI ---------------------------------------------------------------------------


@pytest.mark.parametrize("env", [{}, {"CLAUDE_CODE_PROPAGATE_TRACEPARENT": "1"}])
async def test_the_real_cli_ignores_traceparent_while_its_own_tracing_is_off(
    spans: InMemorySpanExporter, real_config: MakeConfig, env: dict[str, str]
) -> None:
    with MessagesStub([text_turn("PONG")]) as stub:
        assert await _output(real_config(stub, env=env)) == "PONG"
    assert len(spans.get_finished_spans()) == 1
    assert stub.traceparents == [None]


@pytest.mark.parametrize("propagate", [False, True])
async def test_with_its_tracing_on_the_real_cli_continues_the_run_trace(
    spans: InMemorySpanExporter,
    real_config: MakeConfig,
    parent_exports: Callable[[OTLPReceiver], None],
    propagate: bool,
) -> None:
    env = {**CLI_TRACING, **({"CLAUDE_CODE_PROPAGATE_TRACEPARENT": "1"} if propagate else {})}
    with OTLPReceiver() as receiver, MessagesStub([text_turn("PONG")]) as stub:
        parent_exports(receiver)
        config = real_config(stub, env=env, otel_passthrough=True, **FLUSHED)
        assert await _output(config) == "PONG"
        [interaction] = await anyio.to_thread.run_sync(receiver.wait_for, "claude_code.interaction")
        [request] = await anyio.to_thread.run_sync(receiver.wait_for, "claude_code.llm_request")
    [span] = spans.get_finished_spans()
    trace_id, span_id = _ids(span)
    assert (interaction.trace_id, interaction.parent_span_id) == (trace_id, span_id)
    assert (request.trace_id, request.parent_span_id) == (trace_id, interaction.span_id)
    expected = (trace_id, request.span_id) if propagate else None
    assert [trace_ids(sent) for sent in stub.traceparents] == [expected]
    assert receiver.headers
    for headers in receiver.headers:
        assert PARENT_SECRET not in json.dumps(headers)


async def test_a_real_cli_session_puts_every_turn_under_the_session_span(
    spans: InMemorySpanExporter,
    real_config: MakeConfig,
    parent_exports: Callable[[OTLPReceiver], None],
) -> None:
    with OTLPReceiver() as receiver, MessagesStub([text_turn("PONG")]) as stub:
        parent_exports(receiver)
        config = real_config(stub, env=CLI_TRACING, otel_passthrough=True, **FLUSHED)
        registry = _registry(config)
        with anyio.fail_after(90):
            async with await registry.open_session("claude", SessionRequest()) as session:
                for prompt in ("one", "two"):
                    async with await session.run(prompt) as run:
                        assert (await run.result()).output == "PONG"
        interactions = await anyio.to_thread.run_sync(
            receiver.wait_for, "claude_code.interaction", 2
        )
    *_, whole = spans.get_finished_spans()
    ours = _ids(whole)
    assert [(item.trace_id, item.parent_span_id) for item in interactions] == [ours, ours]
