"""The fake runtime as a process: exit paths, server-side errors, the ladder against it."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from subagent_sdk.client import JSONRPCError, SDKClient
from subagent_sdk.testing import FakeScript, fake_runtime_argv, main
from subagent_sdk.wire import MAX_TOKENS_MESSAGE

FakeClient = Callable[..., SDKClient]


def test_bad_arguments_and_scripts_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--bogus"]) == 2
    assert main(["--json", '{"no_such_knob": 1}']) == 2
    assert main(["--json", "[]"]) == 2
    assert main(["--json", '{"hang_at": "never"}']) == 2
    assert main(["--json", '{"signal_during_prompt": "SIGNOPE"}']) == 2
    assert "no_such_knob" in capsys.readouterr().err


def test_script_round_trips_through_json(tmp_path: Path) -> None:
    script = FakeScript(text="t", turn_end=None, initialize_result={"x": 1}, noise=["garbage"])
    assert FakeScript.from_json(json.loads(script.to_json())) == script


async def test_server_side_errors(fake_client: FakeClient) -> None:
    with anyio.fail_after(20):
        async with fake_client() as client:
            with pytest.raises(JSONRPCError) as caught:
                await client.request("session/cancel", {"sessionId": "s"})
            assert (caught.value.code, caught.value.message) == (
                -32603,
                "unknown DeepSeek Harness SDK runtime method: session/cancel",
            )
            with pytest.raises(JSONRPCError) as caught:
                await client.initialize(cwd="/", provider="p", model="m", max_tokens=0)
            assert (caught.value.code, caught.value.message) == (-32603, MAX_TOKENS_MESSAGE)
            assert (await client.initialize(cwd="/", provider="p", model="m")).name == (
                "deepseek-harness-sdk-runtime"
            )
        assert client.outcome is not None
        assert client.outcome.exit_code == 0


# Each case gives a generous grace to the step expected to end the runtime, so the outcome
# never depends on machine load.
@pytest.mark.parametrize(
    ("script", "graces", "exit_code", "sig"),
    [
        (FakeScript(ignore_shutdown=True), (20.0, 0.5, 1.0), 0, None),
        (FakeScript(ignore_shutdown=True, ignore_eof=True), (0.3, 20.0, 1.0), 0, None),
        (
            FakeScript(ignore_shutdown=True, ignore_eof=True, trap_sigterm=True),
            (0.3, 0.3, 20.0),
            None,
            "SIGKILL",
        ),
    ],
)
async def test_close_walks_the_ladder_and_only_logs_a_failed_shutdown(
    fake_client: FakeClient,
    caplog: pytest.LogCaptureFixture,
    script: FakeScript,
    graces: tuple[float, float, float],
    exit_code: int | None,
    sig: str | None,
) -> None:
    caplog.set_level(logging.DEBUG, logger="subagent_sdk")
    eof, term, kill = graces
    with anyio.fail_after(60):
        client = fake_client(
            script,
            shutdown_timeout_seconds=0.2,
            eof_grace_seconds=eof,
            term_grace_seconds=term,
            kill_grace_seconds=kill,
        )
        async with client:
            await client.initialize(cwd="/", provider="p", model="m")
        assert await client.close() is True
    assert client.outcome is not None
    assert (client.outcome.exit_code, client.outcome.signal) == (exit_code, sig)
    assert "SDK shutdown request failed" in caplog.text


def test_runs_as_a_module_and_exits_0_on_eof_and_sigterm() -> None:
    argv = fake_runtime_argv(FakeScript())
    eof = subprocess.run(argv, input=b"", capture_output=True, timeout=30, check=False)
    assert eof.returncode == 0
    assert eof.stdout == b""
    request = b'{"jsonrpc":"2.0","id":"req_1","method":"shutdown","params":{}}\n'
    done = subprocess.run(argv, input=request, capture_output=True, timeout=30, check=False)
    assert (done.returncode, done.stdout) == (0, b'{"jsonrpc":"2.0","id":"req_1","result":{}}\n')
    # A prompt read after `shutdown` (one write, so one read) is refused; nothing else is sent.
    prompt = b'{"jsonrpc":"2.0","id":"req_2","method":"session/prompt","params":{"sessionId":"s","contentBlocks":[{"type":"text","text":"hi"}]}}\n'
    late = subprocess.run(
        argv, input=request + prompt, capture_output=True, timeout=30, check=False
    )
    assert (late.returncode, late.stdout.splitlines()) == (
        0,
        [
            b'{"jsonrpc":"2.0","id":"req_1","result":{}}',
            b'{"jsonrpc":"2.0","id":"req_2","error":{"code":-32603,"message":"SDK server is shutting down"}}',
        ],
    )
    if sys.platform != "win32":
        ready = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"cwd":"/","provider":"p","model":"m"}}\n'
        with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.write(ready)
            process.stdin.flush()
            assert b'"serverInfo"' in process.stdout.readline()  # readiness line: it is serving
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0
            process.stdin.close()
