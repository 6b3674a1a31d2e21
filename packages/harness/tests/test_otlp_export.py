"""`harness delegate` exports its spans over OTLP/HTTP when the standard variables ask for it.

A real receiver on 127.0.0.1 decodes the protobuf the exporter sends (`opentelemetry-proto`),
and the harness runs as a user runs it: the installed console script in its own process, the
fake ACP child configured in harness.toml.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_acp.testing import script_env

trace_service = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

SCRIPT = Path(sys.executable).with_name("harness")
SECRET = "sk-otlp-secret-42"
GRACES = (
    "dispose_eof_grace_seconds = 0.5\ndispose_grace_seconds = 0.5\n"
    "dispose_kill_grace_seconds = 1.0\n"
)


class Receiver:
    """An OTLP/HTTP traces endpoint that keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                request = trace_service.ExportTraceServiceRequest()
                request.ParseFromString(body)
                with receiver._lock:
                    for resource in request.resource_spans:
                        for scope in resource.scope_spans:
                            receiver.spans.extend(scope.spans)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.close()


def _attributes(span: Any) -> dict[str, object]:
    values: dict[str, object] = {}
    for item in span.attributes:
        kind = item.value.WhichOneof("value")
        value = getattr(item.value, kind)
        if kind == "array_value":
            value = tuple(getattr(v, v.WhichOneof("value")) for v in value.values)
        values[item.key] = value
    return values


def _workspace(tmp_path: Path, name: str, script: Mapping[str, Any]) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    env = ", ".join(f"{key} = {json.dumps(value)}" for key, value in script_env(script).items())
    (workspace / "harness.toml").write_text(
        f'[providers.{name}]\nkind = "acp"\ncommand = {json.dumps(sys.executable)}\n'
        f'args = ["-m", "harness", "fake-acp-child"]\nenv = {{ {env} }}\n{GRACES}',
        encoding="utf-8",
    )
    return workspace


async def _delegate(workspace: Path, name: str, receiver: Receiver) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "OTEL_"))}
    env |= {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "HARNESS_STATE_DIR": str(workspace.parent / "state"),
    }
    args = [str(SCRIPT), "delegate", "-w", str(workspace), "-p", name, f"do {SECRET}"]
    with anyio.fail_after(60):
        done = await anyio.run_process(args, check=False, env=env)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_a_delegation_is_one_client_span_with_closed_facts(
    tmp_path: Path, receiver: Receiver
) -> None:
    workspace = _workspace(tmp_path, "child", {"text": f"answer {SECRET}"})
    code, out, err = await _delegate(workspace, "child", receiver)
    assert code == 0, err
    assert SECRET in out
    [span] = receiver.spans
    assert span.name == "invoke_agent child"
    assert span.kind == span.SPAN_KIND_CLIENT
    assert span.parent_span_id == b""
    attributes = _attributes(span)
    assert attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "child",
        "gen_ai.response.finish_reasons": ("completed",),
    }
    assert span.status.code == span.status.STATUS_CODE_UNSET
    assert SECRET not in str(span)


async def test_a_crashed_child_span_is_an_error_with_its_category_only(
    tmp_path: Path, receiver: Receiver
) -> None:
    script = {
        "text": "Working",
        "stderr": {"text": f"fatal: token={SECRET}\n"},
        "crash": {"at": "prompt", "exit_code": 3},
    }
    workspace = _workspace(tmp_path, "crasher", script)
    code, _, err = await _delegate(workspace, "crasher", receiver)
    assert code == 1, err
    [span] = receiver.spans
    assert span.status.code == span.status.STATUS_CODE_ERROR
    assert _attributes(span)["error.type"] == "process-exit"
    assert SECRET not in str(span)


async def test_without_the_variables_nothing_is_exported(
    tmp_path: Path, receiver: Receiver
) -> None:
    workspace = _workspace(tmp_path, "child", {"text": "plain"})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "OTEL_"))}
    env["HARNESS_STATE_DIR"] = str(tmp_path / "state")
    args = [str(SCRIPT), "delegate", "-w", str(workspace), "-p", "child", "hi"]
    with anyio.fail_after(60):
        done = await anyio.run_process(args, check=False, env=env)
    assert done.returncode == 0
    assert receiver.spans == []


async def test_a_fanout_is_one_workflow_span_over_its_children(
    tmp_path: Path, receiver: Receiver
) -> None:
    workspace = _workspace(tmp_path, "child", {"text": "done"})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "OTEL_"))}
    env |= {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "HARNESS_STATE_DIR": str(tmp_path / "state"),
    }
    args = [str(SCRIPT), "fanout", "-w", str(workspace), "-a", "child", "-a", "child"]
    args += ["--isolation", "copy", "--json", "go"]
    with anyio.fail_after(60):
        done = await anyio.run_process(args, check=False, env=env)
    assert done.returncode == 0, done.stderr.decode()
    [workflow] = [span for span in receiver.spans if span.name == "invoke_workflow fanout"]
    children = [span for span in receiver.spans if span.name == "invoke_agent child"]
    assert len(receiver.spans) == 3
    assert workflow.kind == workflow.SPAN_KIND_INTERNAL
    assert _attributes(workflow) == {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.agent.name": "fanout",
    }
    assert len(children) == 2
    for child in children:
        assert child.trace_id == workflow.trace_id
        assert child.parent_span_id == workflow.span_id
