"""Traces over OTLP when the person asks for them with the standard variables.

With the `[otel]` extra installed (the OpenTelemetry SDK and its OTLP/HTTP exporter) and
`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_TRACES_EXPORTER`
set, every command exports the spans `subagent_core` makes (a run, a session and its turns, a
fan-out's workflow) with a batch processor; the exporter reads the rest of the standard
variables itself (headers, protocol, timeouts). `OTEL_TRACES_EXPORTER=none` or
`OTEL_SDK_DISABLED=true` turns it off. Without the extra, or without the variables, nothing is
imported. The spans carry closed facts only (see `subagent_core`'s tracing), and nothing here
writes to stdout, which may be a protocol stream (`harness acp-agent`, `harness mcp`).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from typing import Any

_log = logging.getLogger("harness")

SERVICE_NAME = "harness"
"""`service.name` when `OTEL_SERVICE_NAME` does not say otherwise."""


def wanted(environ: Mapping[str, str]) -> bool:
    """True when the standard variables ask for traces and do not turn them off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return bool(
        exporter
        or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def start_telemetry(environ: Mapping[str, str] | None = None) -> Callable[[], None] | None:
    """Installs the OTLP trace pipeline when wanted and available; returns its flush-and-stop.

    Returns None (and imports nothing) when traces are not asked for or the extra is missing.
    """
    environ = os.environ if environ is None else environ
    if not wanted(environ):
        return None
    if importlib.util.find_spec("opentelemetry.sdk") is None or (
        importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http") is None
    ):
        _log.info("OTEL variables are set but the [otel] extra is not installed")
        return None
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    attributes: dict[str, Any] = {}
    if "OTEL_SERVICE_NAME" not in environ:
        attributes["service.name"] = SERVICE_NAME
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)

    def stop() -> None:
        try:
            provider.shutdown()  # flushes what the batch still holds
        except Exception:
            _log.warning("the OTLP exporter could not flush", exc_info=True)

    return stop


_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")


@contextmanager
def continued_trace(traceparent: object) -> Generator[None]:
    """The caller's trace (a W3C `traceparent` a client sent, e.g. in ACP `_meta`) as the
    current context, so the spans of what runs inside are its children; a value that is not a
    well-formed traceparent, or no OpenTelemetry API, changes nothing."""
    if (
        not isinstance(traceparent, str)
        or _TRACEPARENT.fullmatch(traceparent) is None
        or importlib.util.find_spec("opentelemetry") is None
    ):
        yield
        return
    from opentelemetry import context, propagate

    token = context.attach(propagate.extract({"traceparent": traceparent}))
    try:
        yield
    finally:
        context.detach(token)
