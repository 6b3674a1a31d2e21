"""`harness delegate` exports its spans over OTLP/HTTP when the standard variables ask for it.

A real receiver on 127.0.0.1 decodes the protobuf the exporter sends (`opentelemetry-proto`),
and the harness runs as a user runs it: the installed console script in its own process, the
fake ACP child configured in harness.toml.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_acp.testing import script_env
from subagent_core.testing import OTLPReceiver

pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3
STATUS_CODE_UNSET = 0
STATUS_CODE_ERROR = 2

SCRIPT = Path(sys.executable).with_name("harness")
SECRET = "sk-otlp-secret-42"
GRACES = (
    "dispose_eof_grace_seconds = 0.5\ndispose_grace_seconds = 0.5\n"
    "dispose_kill_grace_seconds = 1.0\n"
)


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as server:
        yield server


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


async def _delegate(workspace: Path, name: str, receiver: OTLPReceiver) -> tuple[int, str, str]:
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
    tmp_path: Path, receiver: OTLPReceiver
) -> None:
    workspace = _workspace(tmp_path, "child", {"text": f"answer {SECRET}"})
    code, out, err = await _delegate(workspace, "child", receiver)
    assert code == 0, err
    assert SECRET in out
    [span] = receiver.spans
    assert span.name == "invoke_agent child"
    assert span.kind == SPAN_KIND_CLIENT
    assert span.parent_span_id == ""
    attributes = span.attributes
    assert attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "child",
        "gen_ai.response.finish_reasons": ("completed",),
    }
    assert span.status_code == STATUS_CODE_UNSET
    assert SECRET not in str(span)


async def test_a_crashed_child_span_is_an_error_with_its_category_only(
    tmp_path: Path, receiver: OTLPReceiver
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
    assert span.status_code == STATUS_CODE_ERROR
    assert span.attributes["error.type"] == "process-exit"
    assert SECRET not in str(span)


async def test_without_the_variables_nothing_is_exported(
    tmp_path: Path, receiver: OTLPReceiver
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
    tmp_path: Path, receiver: OTLPReceiver
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
    assert workflow.kind == SPAN_KIND_INTERNAL
    assert workflow.attributes == {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.agent.name": "fanout",
    }
    assert len(children) == 2
    for child in children:
        assert child.trace_id == workflow.trace_id
        assert child.parent_span_id == workflow.span_id
