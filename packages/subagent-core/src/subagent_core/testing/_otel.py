"""Test support for traced runs: the spans this process finished, and an OTLP/HTTP receiver.

`recorded_spans()` traces the runs started in its block into one in-memory exporter, on the
one SDK tracer provider a process may set (OpenTelemetry allows it once), switched off outside
such blocks. `OTLPReceiver` is a real OTLP/HTTP endpoint on 127.0.0.1 that decodes what a
child's own exporter sends (protobuf, with `opentelemetry-proto`), so a test can see a child's
spans and where they hang in the trace.

Both need the OpenTelemetry SDK and protos (development dependencies), imported on first use.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_recorder: _Recorder | None = None


class _Recorder:
    """The process's SDK tracer provider, switched on only inside `recorded_spans` blocks."""

    def __init__(self) -> None:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        recorder = self
        self.depth = 0
        self.exporter = InMemorySpanExporter()

        class SwitchedProvider(TracerProvider):
            """Real tracers inside a block; elsewhere no-op ones (no span, no context)."""

            def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
                if recorder.depth == 0:
                    return trace.NoOpTracer()
                return super().get_tracer(*args, **kwargs)

        provider = trace.get_tracer_provider()
        if isinstance(provider, TracerProvider):
            # Someone installed one first (OpenTelemetry allows it once): record its spans.
            provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        else:
            switched = SwitchedProvider()
            switched.add_span_processor(SimpleSpanProcessor(self.exporter))
            trace.set_tracer_provider(switched)


@contextmanager
def recorded_spans() -> Generator[InMemorySpanExporter]:
    """Traces what starts in the block; yields the in-memory exporter (cleared on entry) that
    holds every span finished from then on.

    Outside such a block the process's provider hands out no-op tracers, so a test that did
    not ask for tracing runs untraced (no span, no trace context sent to a child) whatever ran
    before it. Needs `opentelemetry-sdk`.
    """
    global _recorder
    if _recorder is None:
        _recorder = _Recorder()
    recorder = _recorder
    recorder.exporter.clear()
    recorder.depth += 1
    try:
        yield recorder.exporter
    finally:
        recorder.depth -= 1


def trace_ids(traceparent: str | None) -> tuple[str, str] | None:
    """The trace id and parent span id of a W3C `traceparent` (lowercase hex), if it is one."""
    if traceparent is None:
        return None
    parts = traceparent.strip().split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    return parts[1], parts[2]


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    """One span an exporter sent, as the receiver decoded it (ids in lowercase hex)."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    """Empty for a root span."""
    kind: int
    """The OTLP `SpanKind` number (3 is CLIENT)."""
    attributes: Mapping[str, object]
    status_code: int
    """The OTLP status code (2 is ERROR)."""


class OTLPReceiver:
    """An OTLP/HTTP traces endpoint on 127.0.0.1; a context manager.

    `endpoint` is the base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`); traces go to `/v1/traces`.
    Every export request's headers are kept (lower-cased names) and its spans decoded; other
    signals are answered and dropped.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[ReceivedSpan] = []
        self._headers: list[dict[str, str]] = []
        self._arrived = threading.Condition(self._lock)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="otlp-receiver", daemon=True
        )

    @property
    def endpoint(self) -> str:
        """`http://127.0.0.1:<port>`."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def spans(self) -> list[ReceivedSpan]:
        """Every span received so far, in arrival order."""
        with self._lock:
            return list(self._spans)

    @property
    def headers(self) -> list[dict[str, str]]:
        """The headers of every traces export request received so far."""
        with self._lock:
            return [dict(item) for item in self._headers]

    def wait_for(self, name: str, count: int = 1, *, timeout: float = 30.0) -> list[ReceivedSpan]:
        """The spans named `name`, once `count` of them arrived (blocking; [] on timeout)."""
        with self._arrived:
            self._arrived.wait_for(
                lambda: sum(span.name == name for span in self._spans) >= count, timeout
            )
            return [span for span in self._spans if span.name == name]

    def _record(self, headers: dict[str, str], spans: list[ReceivedSpan]) -> None:
        with self._arrived:
            self._headers.append(headers)
            self._spans.extend(spans)
            self._arrived.notify_all()

    def start(self) -> OTLPReceiver:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OTLPReceiver:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def decode_spans(body: bytes) -> list[ReceivedSpan]:
    """The spans of one OTLP `ExportTraceServiceRequest` (protobuf)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                attributes = {item.key: _attribute_value(item.value) for item in span.attributes}
                spans.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        kind=int(span.kind),
                        attributes=attributes,
                        status_code=int(span.status.code),
                    )
                )
    return spans


def _attribute_value(value: Any) -> object:
    """One OTLP `AnyValue` as Python: a scalar, or a tuple for an array (as the SDK records it)."""
    field = value.WhichOneof("value")
    if field is None:
        return None
    if field == "array_value":
        return tuple(_attribute_value(item) for item in value.array_value.values)
    return getattr(value, field)


def _handler_for(receiver: OTLPReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read the receiver instead."""

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            if (self.headers.get("content-encoding") or "").lower() == "gzip":
                body = gzip.decompress(body)
            if self.path.split("?", 1)[0].endswith("/v1/traces"):
                headers = {name.lower(): value for name, value in self.headers.items()}
                receiver._record(headers, decode_spans(body))  # pyright: ignore[reportPrivateUsage]
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

    return Handler
