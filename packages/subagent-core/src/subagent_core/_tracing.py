"""OpenTelemetry spans for runs, sessions and turns — closed facts and numbers only.

When `opentelemetry-api` is importable (the `subagent-core[otel]` extra), every run the
registry starts is a CLIENT span `invoke_agent {provider}` following the GenAI semantic
conventions for agents; a session is such a span and each of its turns a span of its own under
it. Nothing is imported and nothing is paid without the API: `subagent_core` looks for it at
the first run, never at import.

A span carries only what the parent configured or counted: the provider's registry name, the
model it was configured with, the session handle (ours — never the child's own session id),
token counts, our closed stop reason and the diagnostic's closed category. Never the prompt,
the output, titles, paths, or any other text the child wrote. Tool calls and permission
decisions become span events with their closed kinds and decisions.

The current run is carried in a context variable while the provider starts it, so the
lifecycle can join a turn to it (`current_run`) and a provider can hand the trace context to
its child (`Turn.traceparent`, a W3C `traceparent` value).
"""

from __future__ import annotations

import contextvars
import importlib
import importlib.util
import re
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from ._events import PermissionEvent, SubagentEvent, ToolCallEvent
from ._types import SubagentResult, Usage

_CATEGORY = re.compile(r"category: ([a-z-]+)")
_api: Any = None
_looked = False

OPERATION: Final = "invoke_agent"


def _otel() -> Any:
    """The `opentelemetry.trace` module when the API is installed, else None (looked up once)."""
    global _api, _looked
    if not _looked:
        _looked = True
        if importlib.util.find_spec("opentelemetry") is not None:
            try:
                _api = importlib.import_module("opentelemetry.trace")
            except ImportError:
                _api = None
    return _api


class RunTrace:
    """One run's, session's or turn's span; every method is safe to call after it ended."""

    __slots__ = ("_ended", "_span")

    def __init__(self, span: Any) -> None:
        self._span = span
        self._ended = False

    @property
    def span(self) -> Any:
        """The OpenTelemetry span."""
        return self._span

    def event(self, event: SubagentEvent) -> None:
        """Records a tool call's closed kind and status, or a permission decision."""
        if self._ended:
            return
        if isinstance(event, ToolCallEvent):
            attributes: dict[str, Any] = {"gen_ai.tool.type": event.kind}
            if event.status is not None:
                attributes["subagent.tool.status"] = event.status
            self._span.add_event("gen_ai.tool.call", attributes)
        elif isinstance(event, PermissionEvent):
            attributes = {
                "subagent.permission.policy": event.policy,
                "subagent.permission.decision": event.decision,
            }
            if event.tool_kind is not None:
                attributes["gen_ai.tool.type"] = event.tool_kind
            self._span.add_event("subagent.permission", attributes)

    def end(self, result: SubagentResult | None = None, *, start_error: str | None = None) -> None:
        """Ends the span with the run's closed facts (idempotent)."""
        if self._ended:
            return
        self._ended = True
        span = self._span
        diagnostic = start_error
        if result is not None:
            span.set_attribute("gen_ai.response.finish_reasons", (result.stop_reason,))
            _set_usage(span, result.usage)
            diagnostic = result.diagnostic if result.stop_reason != "completed" else None
        failed = start_error is not None or (
            result is not None
            and (result.stop_reason == "error" or (result.stop_reason == "aborted" and diagnostic))
        )
        if failed:
            api = _otel()
            category = _category(diagnostic)
            span.set_attribute("error.type", category)
            span.set_status(api.Status(api.StatusCode.ERROR, category))
        span.end()

    @contextmanager
    def current(self) -> Generator[None]:
        """This span as the current one (and the run the lifecycle joins turns to)."""
        api = _otel()
        token = _current.set(self)
        try:
            with api.use_span(self._span, end_on_exit=False):
                yield
        finally:
            _current.reset(token)


_current: contextvars.ContextVar[RunTrace | None] = contextvars.ContextVar(
    "subagent_core_run_trace", default=None
)


def current_run() -> RunTrace | None:
    """The run being started in this context, if it is traced."""
    return _current.get()


def start_span(
    provider: str,
    *,
    model: str | None = None,
    system: str | None = None,
    conversation: str | None = None,
) -> RunTrace | None:
    """A CLIENT span `invoke_agent {provider}` under the current span, or None untraced."""
    api = _otel()
    if api is None:
        return None
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": OPERATION,
        "gen_ai.agent.name": provider,
    }
    if system is not None:
        attributes["gen_ai.provider.name"] = system
    if model is not None:
        attributes["gen_ai.request.model"] = model
    if conversation is not None:
        attributes["gen_ai.conversation.id"] = conversation
    tracer = api.get_tracer("subagent_core")
    span = tracer.start_span(
        f"{OPERATION} {provider}", kind=api.SpanKind.CLIENT, attributes=attributes
    )
    if not span.is_recording() and not span.get_span_context().is_valid:
        # No tracer provider and no trace to continue (the API installed, tracing not set up):
        # nothing would be recorded or propagated, so the run goes the untraced way.
        return None
    return RunTrace(span)


@contextmanager
def workflow_span(name: str) -> Generator[None]:
    """An INTERNAL span `invoke_workflow {name}` current for the block (the runs started in it
    are its children): a fan-out over several agents, say. Untraced, it does nothing."""
    api = _otel()
    if api is None:
        yield
        return
    attributes = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.agent.name": name}
    tracer = api.get_tracer("subagent_core")
    with tracer.start_as_current_span(
        f"invoke_workflow {name}", kind=api.SpanKind.INTERNAL, attributes=attributes
    ):
        yield


def traceparent() -> str | None:
    """The W3C `traceparent` of the current span (for a child that can join the trace).

    Its flags carry the sampled bit only. The Python SDK also sets Trace Context Level 2's
    random-trace-id bit (`03`), and a Level 1 reader refuses a version-00 header with flags
    above `02`: codex's (opentelemetry-rust) drops the whole context as invalid.
    """
    api = _otel()
    if api is None:
        return None
    context = api.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    flags = int(context.trace_flags) & 0x01
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags:02x}"


def provider_facts(provider: object) -> Mapping[str, str]:
    """What a provider says of itself for spans: its model (configured) and its vendor.

    A provider may expose `trace_system` (`anthropic`, `openai`, …); its config's `model`, when
    a plain string, is the configured model.
    """
    facts: dict[str, str] = {}
    system = getattr(provider, "trace_system", None)
    if isinstance(system, str):
        facts["system"] = system
    model = getattr(getattr(provider, "config", None), "model", None)
    if isinstance(model, str) and model:
        facts["model"] = model
    return facts


def _set_usage(span: Any, usage: Usage | None) -> None:
    if usage is None:
        return
    if usage.input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    if usage.output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    if usage.cached_input_tokens is not None:
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cached_input_tokens)


def _category(diagnostic: str | None) -> str:
    """The closed category of our own diagnostic line (`unknown` without one)."""
    match = None if diagnostic is None else _CATEGORY.search(diagnostic)
    return "unknown" if match is None else match.group(1)
