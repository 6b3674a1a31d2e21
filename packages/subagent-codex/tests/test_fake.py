"""The fake app-server itself: its frames validate against the schema the real binary
generates, and a scenario it cannot read stops it at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

jsonschema = pytest.importorskip("jsonschema")

_SCENARIO = {
    "turn": [
        {"reasoning": "thinking"},
        {"delta": "he"},
        {"message": "draft", "phase": "commentary"},
        {"command": "ls"},
        {"usage": [20, 5, 9]},
        {"approval": "command"},
        {"approval": "fileChange"},
        {"approval": "permissions"},
        {"error": {"responseStreamDisconnected": {"httpStatusCode": 401}}, "willRetry": True},
        {"error": "serverOverloaded"},
        {"message": "done", "phase": "final_answer"},
        {"complete": "failed", "info": {"httpConnectionFailed": {"httpStatusCode": 500}}},
        {"complete": "completed"},
    ]
}

_RESPONSES = {
    1: "v1/InitializeResponse.json",
    2: "v2/GetAccountResponse.json",
    3: "v2/ThreadStartResponse.json",
    4: "v2/TurnStartResponse.json",
}


@pytest.fixture(scope="module")
def schema_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from subagent_codex._config import bundled_codex

    binary = bundled_codex()
    if binary is None:
        pytest.skip("openai-codex-cli-bin (the [cli] extra) is not installed")
    out = tmp_path_factory.mktemp("codex-schema")
    home = tmp_path_factory.mktemp("codex-home")
    env = {**os.environ, "CODEX_HOME": str(home)}
    subprocess.run(
        [binary, "app-server", "generate-json-schema", "--out", str(out)],
        check=True,
        env=env,
        capture_output=True,
        timeout=60,
    )
    return out


def _validator(schema_dir: Path, name: str) -> Any:
    schema = json.loads((schema_dir / name).read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(schema)


def _converse(workspace: Path) -> list[dict[str, Any]]:
    """Drives the fake through the handshake and the scenario's turn; returns its frames."""
    from subagent_codex.testing import fake_app_server_argv, scenario_env

    env = {**os.environ, **scenario_env(_SCENARIO)}
    proc = subprocess.Popen(
        fake_app_server_argv(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        cwd=workspace,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    frames: list[dict[str, Any]] = []

    def send(frame: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(frame).encode() + b"\n")
        proc.stdin.flush()

    send({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "0"}}})
    send({"method": "initialized"})
    send({"id": 2, "method": "account/read", "params": {}})
    send({"id": 3, "method": "thread/start", "params": {"cwd": str(workspace), "ephemeral": True}})
    try:
        for line in proc.stdout:
            frame = json.loads(line)
            frames.append(frame)
            if frame.get("id") == 3:
                thread = frame["result"]["thread"]["id"]
                send({"id": 4, "method": "turn/start", "params": {"threadId": thread, "input": []}})
            elif "method" in frame and "id" in frame:
                send({"id": frame["id"], "result": {"decision": "decline"}})
            elif (
                frame.get("method") == "turn/completed"
                and frame["params"]["turn"]["status"] == "completed"
            ):
                break
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
    return frames


def test_every_frame_of_the_fake_fits_the_real_schema(schema_dir: Path, tmp_path: Path) -> None:
    frames = _converse(tmp_path)
    notifications = _validator(schema_dir, "ServerNotification.json")
    requests = _validator(schema_dir, "ServerRequest.json")
    seen: set[str] = set()
    for frame in frames:
        if "method" in frame and "id" in frame:
            requests.validate({k: frame[k] for k in ("id", "method", "params")})
            seen.add(frame["method"])
        elif "method" in frame:
            notifications.validate({"method": frame["method"], "params": frame["params"]})
            seen.add(frame["method"])
        else:
            _validator(schema_dir, _RESPONSES[frame["id"]]).validate(frame["result"])
            seen.add(f"response {frame['id']}")
    assert {
        "item/agentMessage/delta",
        "item/reasoning/summaryTextDelta",
        "item/started",
        "item/completed",
        "thread/tokenUsage/updated",
        "error",
        "turn/completed",
        "item/commandExecution/requestApproval",
        "item/fileChange/requestApproval",
        "item/permissions/requestApproval",
        "response 1",
        "response 2",
        "response 3",
        "response 4",
    } <= seen


def test_the_schema_knows_every_method_the_provider_reads(schema_dir: Path) -> None:
    """The methods the provider reads or answers exist in the generated protocol."""
    from subagent_codex._permission import _KINDS  # pyright: ignore[reportPrivateUsage]

    notifications = json.loads((schema_dir / "ServerNotification.json").read_text(encoding="utf-8"))
    requests = json.loads((schema_dir / "ServerRequest.json").read_text(encoding="utf-8"))

    def methods(schema: dict[str, Any]) -> set[str]:
        return {m for one in schema["oneOf"] for m in one["properties"]["method"]["enum"]}

    read = {
        "error",
        "turn/completed",
        "item/started",
        "item/completed",
        "item/agentMessage/delta",
        "item/reasoning/summaryTextDelta",
        "item/reasoning/textDelta",
        "thread/tokenUsage/updated",
    }
    assert read <= methods(notifications)
    assert set(_KINDS) | {"mcpServer/elicitation/request", "item/tool/requestUserInput"} <= methods(
        requests
    )
    assert sys.version_info >= (3, 11)


@pytest.mark.parametrize(
    ("scenario", "reason"),
    [
        ("[]", "the scenario must be a JSON object"),
        ("{not json", "the scenario is not JSON"),
        ('{"hang_att": "turn"}', "unknown knobs: hang_att"),
        ('{"turn": [{"mesage": "hi"}]}', "unknown action: {'mesage': 'hi'}"),
        ('{"turns": [[{"complete": "completed"}], "oops"]}', "a turn must be a list of actions"),
    ],
)
def test_a_scenario_the_fake_cannot_read_fails_it_at_once(scenario: str, reason: str) -> None:
    """A typo in a test's scenario stops the fake before it answers anything."""
    from subagent_codex.testing import SCENARIO_ENV, fake_app_server_argv

    done = subprocess.run(
        fake_app_server_argv(),
        input=b"",
        env={**os.environ, SCENARIO_ENV: scenario},
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode() == f"fake app-server: {reason}\n"
