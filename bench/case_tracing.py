"""Tracing (issue 42): what spans cost an ACP run through the registry.

Three states of the same run (the fake ACP child, `registry.start` → result → dispose), timed
in the same rounds:

- untraced: `subagent_core` as without the `[otel]` extra (its tracing found no API);
- off: the API importable and no tracer provider set (spans are non-recording) — target ≤ 1.01×
  of untraced;
- on: an SDK tracer provider with a batch processor exporting over OTLP/HTTP to a receiver on
  127.0.0.1 — target ≤ 1.05× of untraced.

The states are switched inside one process by pointing core's looked-up API at nothing, at the
no-op default, or at the SDK provider, so every other cost is shared.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from _context import PYTHON, BenchError, Context
from _report import Section, Target
from _timing import Subject, paired, ratios
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import SubagentRegistry, SubagentRequest, _tracing  # pyright: ignore[reportPrivateUsage]

TEXT = "Hello from the fake ACP child."
PAIRS = 40
"""Rounds per comparison: one pair spreads about ±20 % on a shared machine, and the off target
is 1 %, so the median needs many pairs to say anything."""


@contextmanager
def _receiver() -> Generator[str]:
    """An OTLP/HTTP endpoint on 127.0.0.1 that accepts and drops what it is sent."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host}:{port}/v1/traces"
    finally:
        server.shutdown()
        server.server_close()


def _run(ctx: Context, registry: SubagentRegistry, api: Any) -> Subject:
    async def subject() -> float:
        _tracing._api, _tracing._looked = api, True  # pyright: ignore[reportPrivateUsage]
        started = time.perf_counter()
        run = await registry.start("acp", SubagentRequest(prompt="bench", cwd=ctx.work))
        async with run:
            result = await run.result()
        elapsed = time.perf_counter() - started
        if result.stop_reason != "completed" or result.output != TEXT:
            raise BenchError(f"a traced run ended {result.stop_reason}")
        return elapsed

    return subject


async def tracing(ctx: Context) -> list[Section]:
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as error:
        raise BenchError(f"the [otel] extra is not installed ({error.name})") from None
    script = ctx.write_json("tracing-acp.json", {"text": TEXT})
    registry = SubagentRegistry()
    registry.register(
        ACPProvider(
            ACPConfig(command=PYTHON, args=["-m", "subagent_acp.testing", "--script", script])
        )
    )
    section = Section(
        "Tracing: an ACP run untraced, with the API and no provider, and exporting",
        notes=[
            "One whole run through the registry (spawn, handshake, prompt, settle, dispose) on "
            "the fake ACP child. Untraced: core found no OpenTelemetry API. Off: the API, no "
            "tracer provider (non-recording spans). On: the SDK with a batch processor "
            "exporting over OTLP/HTTP to a receiver on 127.0.0.1.",
        ],
    )
    with _receiver() as endpoint:
        no_op = trace.get_tracer_provider()
        off = await paired(
            {"untraced": _run(ctx, registry, None), "off": _run(ctx, registry, trace)},
            warmup=ctx.reps(3, 1),
            repeat=ctx.reps(PAIRS, 5),
        )
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        trace.set_tracer_provider(provider)
        try:
            on = await paired(
                {"untraced": _run(ctx, registry, None), "on": _run(ctx, registry, trace)},
                warmup=ctx.reps(3, 1),
                repeat=ctx.reps(PAIRS, 5),
            )
        finally:
            provider.shutdown()
        if no_op is provider:
            raise BenchError("the tracer provider was set before the off rounds")
    _tracing._looked, _tracing._api = False, None  # pyright: ignore[reportPrivateUsage]
    section.add("untraced run", off["untraced"].scaled(1000), "ms")
    section.add("off: API, no provider", off["off"].scaled(1000), "ms")
    section.add("on: batch OTLP export", on["on"].scaled(1000), "ms")
    section.add("off / untraced", ratios(off["off"], off["untraced"]), "×", Target("<=", 1.01))
    section.add("on / untraced", ratios(on["on"], on["untraced"]), "×", Target("<=", 1.05))
    return [section]
