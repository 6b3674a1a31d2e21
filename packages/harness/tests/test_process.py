"""The real `python -m harness`: exit codes, no tracebacks, fast help, Ctrl-C."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from model_agent.testing import open_scripted_model_server
from subagent_core import child_env
from subagent_core.kit import open_managed_process

HARNESS = [sys.executable, "-m", "harness"]


async def _run(
    args: list[str], *, env: dict[str, str | None] | None = None
) -> tuple[int, str, str]:
    async with open_managed_process(
        [*HARNESS, *args], env=child_env(env or {}), stdin="devnull", stderr="pipe"
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        out, err = bytearray(), bytearray()

        async def drain(stream: anyio.abc.ByteReceiveStream, into: bytearray) -> None:
            async for chunk in stream:
                into.extend(chunk)

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain, process.stdout, out)
            tg.start_soon(drain, process.stderr, err)
        outcome = await process.wait()
    assert outcome.exit_code is not None
    return outcome.exit_code, out.decode(), err.decode()


async def _interrupt_run(
    rules: dict[str, Any], workspace: Path, prompt: str, wait_for_pid: Any
) -> tuple[int | None, str, int]:
    """`harness run` on `rules`; SIGINT once the command wrote `started`: (exit, stderr, pid)."""
    with anyio.fail_after(60):
        async with open_scripted_model_server(rules) as server:
            argv = [*HARNESS, "run", "--mode", "execute", "--workspace", str(workspace)]
            argv += ["--base-url", server.base_url, prompt]
            async with open_managed_process(
                argv, env=child_env({}), stdin="devnull", stderr="pipe"
            ) as process:
                assert process.stdout is not None
                err = bytearray()

                async def drain_err() -> None:
                    assert process.stderr is not None
                    async for chunk in process.stderr:
                        err.extend(chunk)

                pid = -1
                async with anyio.create_task_group() as tg:
                    tg.start_soon(drain_err)
                    pid = await wait_for_pid(workspace / "started")
                    os.kill(process.pid, signal.SIGINT)
                    async for _ in process.stdout:
                        pass
                outcome = await process.wait()
    return outcome.exit_code, err.decode(), pid


def _gone(pid: int) -> bool:
    """The process ended (a zombie awaiting its reaper counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def test_help_is_fast_and_imports_nothing_heavy(capsys: pytest.CaptureFixture[str]) -> None:
    """Measured and printed (never asserted: the machine's load decides the figure)."""
    with anyio.fail_after(60):
        started = time.perf_counter()
        code, out, _ = await _run(["--help"])
        elapsed = time.perf_counter() - started
        with capsys.disabled():
            print(f"\nharness --help: {elapsed:.2f} s wall (a fresh interpreter included)")
        assert code == 0
        assert "acp-agent" in out
        script = (
            "import sys, harness.cli; "
            "print(sorted(m for m in ('acp', 'httpx', 'model_agent', 'subagent_acp', "
            "'subagent_sdk', 'rich') if m in sys.modules))"
        )
        async with open_managed_process([sys.executable, "-c", script], stdin="devnull") as process:
            assert process.stdout is not None
            text = b"".join([chunk async for chunk in process.stdout]).decode()
            await process.wait()
    assert text.strip() == "[]"


async def test_missing_key_is_exit_2_without_traceback(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        code, out, err = await _run(
            ["run", "--workspace", str(tmp_path), "hello"],
            env={"DEEPSEEK_API_KEY": None, "DEEPSEEK_BASE_URL": None},
        )
    assert code == 2
    assert out == ""
    assert err.startswith("harness: DEEPSEEK_API_KEY is not set.")
    assert "Traceback" not in err


async def test_bad_config_is_exit_2_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text('[providers.a]\nkind = "nope"\n', encoding="utf-8")
    with anyio.fail_after(60):
        code, _, err = await _run(["providers", "--workspace", str(tmp_path)])
    assert code == 2
    assert err.startswith("harness: /")
    assert err.endswith(
        '/harness.toml: providers.a.kind: must be "acp", "sdk", "claude", "codex" or "model"\n'
    )
    assert err.count("\n") == 1


async def test_run_streams_the_answer_and_exits_0(tmp_path: Path) -> None:
    rules = {"rules": [{"match": "greet", "replies": [{"text": "Hello, person.", "chunks": 3}]}]}
    with anyio.fail_after(60):
        async with open_scripted_model_server(rules) as server:
            code, out, err = await _run(
                ["run", "--workspace", str(tmp_path), "--base-url", server.base_url, "greet me"]
            )
    assert code == 0
    assert out == "Hello, person.\n"
    assert "completed: 0 tool call(s), 0 child(ren); tokens: " in err


async def test_an_unreachable_endpoint_is_exit_1_without_traceback(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        code, out, err = await _run(
            ["run", "--workspace", str(tmp_path), "--base-url", "http://127.0.0.1:1", "hi"]
        )
    assert code == 1
    assert out == ""
    assert "failed: 0 tool call(s), 0 child(ren)\n" in err
    assert err.endswith(
        "harness: the run did not complete: model request failed after 3 retries (connection-refused)\n"
    )
    assert "Traceback" not in err


async def test_run_with_a_failing_model_exits_1(tmp_path: Path) -> None:
    rules = {"rules": [{"match": "boom", "replies": [{"status": 400}]}]}
    with anyio.fail_after(60):
        async with open_scripted_model_server(rules) as server:
            code, out, err = await _run(
                ["run", "--workspace", str(tmp_path), "--base-url", server.base_url, "boom"]
            )
    assert code == 1
    assert out == ""
    assert "failed: 0 tool call(s)" in err
    assert "harness: the run did not complete: model request failed (http-400)" in err
    assert "Traceback" not in err


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_ctrl_c_cancels_the_running_command_and_exits_130(
    tmp_path: Path, wait_for_pid: Any
) -> None:
    """SIGINT reaches the agent's running command; the summary is printed; nothing is left."""
    rules = {
        "rules": [
            {
                "match": "long job",
                "replies": [
                    {
                        "tool_calls": [
                            {
                                "name": "process_execute",
                                "arguments": {"command": "echo $$ > started; exec sleep 60"},
                            }
                        ]
                    },
                    {"text": "never"},
                ],
            }
        ]
    }
    code, text, pid = await _interrupt_run(rules, tmp_path, "long job", wait_for_pid)
    assert code == 130
    assert "cancelled by signal; every command and child was stopped" in text
    assert "Traceback" not in text
    assert _gone(pid)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_fake_model_prints_its_url_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    """`harness fake-model` is model_agent.testing's main: URL first, exit 0 on SIGINT."""
    script = tmp_path / "script.json"
    script.write_text('{"rules": [{"match": "x", "replies": [{"text": "y"}]}]}', encoding="utf-8")
    with anyio.fail_after(60):
        async with open_managed_process(
            [*HARNESS, "fake-model", "--script", str(script)], env=child_env({}), stdin="devnull"
        ) as process:
            assert process.stdout is not None
            first = b""
            while not first.endswith(b"\n"):
                first += await process.stdout.receive()
            os.kill(process.pid, signal.SIGINT)
            outcome = await process.wait()
    assert first.decode().startswith("http://127.0.0.1:")
    assert outcome.exit_code == 0


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_ctrl_c_reaches_an_in_process_childs_command(
    tmp_path: Path, wait_for_pid: Any
) -> None:
    """The parent delegated; the child runs a command; SIGINT stops both, nothing is left."""
    rules = {
        "rules": [
            {
                "match": "CHILD-SLEEP",
                "replies": [
                    {
                        "tool_calls": [
                            {
                                "name": "process_execute",
                                "arguments": {"command": "echo $$ > started; exec sleep 60"},
                            }
                        ]
                    },
                    {"text": "never"},
                ],
            },
            {
                "match": "delegate the wait",
                "replies": [
                    {
                        "tool_calls": [
                            {
                                "name": "subagent_delegate",
                                "arguments": {"task": "CHILD-SLEEP: wait", "description": "wait"},
                            }
                        ]
                    },
                    {"text": "never"},
                ],
            },
        ]
    }
    code, text, pid = await _interrupt_run(rules, tmp_path, "delegate the wait", wait_for_pid)
    assert code == 130
    assert "child" in text
    assert "cancelled by signal; every command and child was stopped" in text
    assert "Traceback" not in text
    assert _gone(pid)
