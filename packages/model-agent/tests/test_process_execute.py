"""process_execute with real shells and real process trees: states, cwd table, bounds, teardown."""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from model_agent import _process_tool as process_tool
from model_agent._output_buffer import HeadTailBuffer
from model_agent._process_tool import (
    DEFAULT_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    ProcessExecuteTool,
    _pump,
    _Streams,
    parse_process_arguments,
    strongest,
)
from model_agent._tool import RequestContext, ToolOutcome
from subagent_core import CancelSignal
from subagent_core.testing import poll_until

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell commands"),
    # Every test: nothing a call started is alive afterwards (zombies count as gone).
    pytest.mark.usefixtures("process_leak_guard"),
]

BASH = "/bin/bash"


def make_context(
    workspace: Path,
    *,
    shell: str | None = BASH,
    cancel: CancelSignal | None = None,
    **overrides: Any,
) -> RequestContext:
    stat = os.stat(workspace)
    fields: dict[str, Any] = {
        "runtime": "model",
        "mode": "execute",
        "space": "local",
        "depth": 0,
        "workspace": workspace,
        "workspace_identity": (stat.st_dev, stat.st_ino),
        "shell": shell,
        "tool_names": ("process_execute",),
        "cancel": cancel if cancel is not None else CancelSignal(),
    }
    fields.update(overrides)
    return RequestContext(**fields)


def make_tool(**graces: float) -> ProcessExecuteTool:
    options = {"drain_grace_seconds": 0.3, "term_grace_seconds": 0.5, "kill_grace_seconds": 1.0}
    options.update(graces)
    return ProcessExecuteTool(**options)


def result_of(outcome: ToolOutcome) -> dict[str, Any]:
    data = json.loads(outcome.content)
    assert list(data) == [
        "status",
        "exitCode",
        "signal",
        "durationMs",
        "stdout",
        "stderr",
        "stdoutTotalBytes",
        "stderrTotalBytes",
        "stdoutOmitted",
        "stderrOmitted",
        "shell",
        "cwd",
    ]
    assert isinstance(data["durationMs"], int)
    assert data["durationMs"] >= 0
    del data["durationMs"]
    return data


def plain(
    status: str,
    stdout: str = "",
    *,
    exit_code: int | None = 0,
    signal: str | None = None,
    stderr: str = "",
    cwd: str = ".",
) -> dict[str, Any]:
    return {
        "status": status,
        "exitCode": exit_code,
        "signal": signal,
        "stdout": stdout,
        "stderr": stderr,
        "stdoutTotalBytes": len(stdout.encode()),
        "stderrTotalBytes": len(stderr.encode()),
        "stdoutOmitted": None,
        "stderrOmitted": None,
        "shell": BASH,
        "cwd": cwd,
    }


async def wait_for_file(path: Path) -> None:
    """Marker-file readiness: the command touches it once its background jobs exist."""
    await poll_until(lambda: os.path.exists(path))


# --- state machine rows ---------------------------------------------------------------------


async def test_exit_zero_is_completed_with_both_streams(
    workspace: Path, process_states: Sequence[str]
) -> None:
    states = process_states
    with anyio.fail_after(30):
        outcome = await make_tool().call(
            {"command": "printf hello; printf oops >&2"}, make_context(workspace)
        )
    assert outcome.is_error is False
    assert result_of(outcome) == plain("completed", "hello", stderr="oops")
    assert states == ["validating", "starting", "running", "completed"]


async def test_nonzero_exit_is_a_normal_result(
    workspace: Path, process_states: Sequence[str]
) -> None:
    states = process_states
    with anyio.fail_after(30):
        outcome = await make_tool().call(
            {"command": "echo partial; exit 3"}, make_context(workspace)
        )
    assert outcome.is_error is False
    assert result_of(outcome) == plain("completed_nonzero", "partial\n", exit_code=3)
    assert states == ["validating", "starting", "running", "completed_nonzero"]


async def test_a_command_killed_by_a_signal_reports_the_signal_name(workspace: Path) -> None:
    with anyio.fail_after(30):
        outcome = await make_tool().call({"command": "kill -9 $$"}, make_context(workspace))
    assert result_of(outcome) == plain("completed_nonzero", exit_code=None, signal="SIGKILL")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "invalid arguments: `command` must be a non-empty string"),
        ({"command": ""}, "invalid arguments: `command` must be a non-empty string"),
        ({"command": "   "}, "invalid arguments: `command` must be a non-empty string"),
        ({"command": 7}, "invalid arguments: `command` must be a non-empty string"),
        ({"command": "echo \0"}, "invalid arguments: `command` must not contain NUL"),
        (
            {"command": "true", "cwd": 3},
            "invalid arguments: `cwd` must be a non-empty relative path string",
        ),
        (
            {"command": "true", "cwd": ""},
            "invalid arguments: `cwd` must be a non-empty relative path string",
        ),
        (
            {"command": "true", "timeout_ms": 0},
            "invalid arguments: `timeout_ms` must be an integer >= 1",
        ),
        (
            {"command": "true", "timeout_ms": 1.5},
            "invalid arguments: `timeout_ms` must be an integer >= 1",
        ),
        (
            {"command": "true", "timeout_ms": True},
            "invalid arguments: `timeout_ms` must be an integer >= 1",
        ),
        (
            {"command": "true", "timeout_ms": "100"},
            "invalid arguments: `timeout_ms` must be an integer >= 1",
        ),
        (
            {"command": "true", "shell": "zsh"},
            "invalid arguments: unknown argument(s); allowed: command, cwd, timeout_ms",
        ),
    ],
)
async def test_invalid_input_is_a_tool_failure_and_starts_nothing(
    workspace: Path,
    process_leak_guard: list[int],
    arguments: dict[str, Any],
    message: str,
    process_states: Sequence[str],
) -> None:
    states = process_states
    with anyio.fail_after(30):
        outcome = await make_tool().call(arguments, make_context(workspace))
    assert outcome == ToolOutcome(message, is_error=True)
    assert states == ["validating", "failed"]
    assert process_leak_guard == []


def test_timeout_defaults_to_120_s_and_is_clamped_to_600_s() -> None:
    assert parse_process_arguments({"command": "x"}).timeout_ms == DEFAULT_TIMEOUT_MS == 120_000
    assert parse_process_arguments({"command": "x", "timeout_ms": None}).timeout_ms == 120_000
    assert parse_process_arguments({"command": "x", "timeout_ms": 1}).timeout_ms == 1
    clamped = parse_process_arguments({"command": "x", "timeout_ms": 10**9})
    assert clamped.timeout_ms == MAX_TIMEOUT_MS == 600_000


async def test_spawn_failure_is_a_tool_failure(
    workspace: Path, process_states: Sequence[str]
) -> None:
    states = process_states
    with anyio.fail_after(30):
        outcome = await make_tool().call(
            {"command": "true"}, make_context(workspace, shell=str(workspace / "no-such-shell"))
        )
    assert outcome == ToolOutcome(
        "process_execute could not start the shell (not-found)", is_error=True
    )
    assert states == ["validating", "starting", "failed"]


async def test_no_shell_is_an_unavailable_backend(workspace: Path) -> None:
    with anyio.fail_after(30):
        outcome = await make_tool().call({"command": "true"}, make_context(workspace, shell=None))
    assert outcome == ToolOutcome(
        "process_execute is unavailable: no shell was found", is_error=True
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"runtime": "opencode"},
            "process_execute refused: only the direct model runtime has this tool",
        ),
        (
            {"space": "ssh"},
            "process_execute refused: commands run only in the local execution space",
        ),
        ({"mode": "ask"}, "process_execute refused: the request is in ask mode"),
        (
            {"tool_names": ("read_file",)},
            "process_execute refused: the tool is not enabled for this request",
        ),
        ({"state": "cancelling"}, "process_execute refused: the request is no longer active"),
        ({"state": "terminal"}, "process_execute refused: the request is no longer active"),
    ],
)
async def test_stale_or_forged_calls_are_rejected(
    workspace: Path, process_leak_guard: list[int], overrides: dict[str, Any], message: str
) -> None:
    with anyio.fail_after(30):
        outcome = await make_tool().call(
            {"command": "touch made"}, make_context(workspace, **overrides)
        )
    assert outcome == ToolOutcome(message, is_error=True)
    assert process_leak_guard == []
    assert not (workspace / "made").exists()


async def test_timeout_terminates_the_tree_and_keeps_output_so_far(
    workspace: Path, process_states: Sequence[str]
) -> None:
    states = process_states
    command = "echo before; sleep 1000 & sleep 1000"
    with anyio.fail_after(30):
        # Long enough for the shell to print under load; the assertion never measures time.
        outcome = await make_tool().call(
            {"command": command, "timeout_ms": 1500}, make_context(workspace)
        )
    assert outcome.is_error is True
    assert result_of(outcome) == plain("timed_out", "before\n", exit_code=None, signal="SIGTERM")
    assert states == ["validating", "starting", "running", "terminating", "timed_out"]


async def test_parent_cancel_terminates_the_tree_and_wins_over_the_late_close(
    workspace: Path,
    process_states: Sequence[str],
) -> None:
    states = process_states
    cancel = CancelSignal()
    command = "sleep 1000 & echo up; touch ready; sleep 1000"
    result: list[ToolOutcome] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                result.append(await make_tool().call({"command": command}, context))

            context = make_context(workspace, cancel=cancel)
            tg.start_soon(run)
            await wait_for_file(workspace / "ready")
            cancel.cancel()
    assert result_of(result[0]) == plain("cancelled", "up\n", exit_code=None, signal="SIGTERM")
    assert states == ["validating", "starting", "running", "terminating", "cancelled"]


async def test_a_command_ignoring_sigterm_is_killed(workspace: Path) -> None:
    cancel = CancelSignal()
    command = "trap '' TERM; echo armed; sleep 1000 & touch ready; wait"
    result: list[ToolOutcome] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                result.append(await make_tool().call({"command": command}, context))

            context = make_context(workspace, cancel=cancel)
            tg.start_soon(run)
            await wait_for_file(workspace / "ready")
            cancel.cancel()
    assert result_of(result[0]) == plain("cancelled", "armed\n", exit_code=None, signal="SIGKILL")


# --- the quiet window -------------------------------------------------------------------------


@pytest.fixture
def pumps(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every pump task a call starts, by the stream it reads."""
    started: list[object] = []

    async def counted(
        stream: anyio.abc.ByteReceiveStream | None, streams: _Streams, buffer: HeadTailBuffer
    ) -> None:
        started.append(stream)
        await _pump(stream, streams, buffer)

    monkeypatch.setattr(process_tool, "_pump", counted)
    return started


async def test_a_tree_that_ends_within_the_quiet_window_needs_no_pump_task(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, pumps: list[object]
) -> None:
    """Its output waited in the pipes and is read once; a command still running when the window
    closes, or one whose background job outlives it, gets both pumps."""
    monkeypatch.setattr(process_tool, "QUIET_SECONDS", 60.0)  # ends within it under any load
    with anyio.fail_after(30):
        outcome = await make_tool().call(
            {"command": "printf out; printf err >&2; exit 3"}, make_context(workspace)
        )
        assert result_of(outcome) == plain("completed_nonzero", "out", stderr="err", exit_code=3)
        assert pumps == []
        outcome = await make_tool().call(
            {"command": "sleep 1000 & echo done"}, make_context(workspace)
        )
        assert result_of(outcome) == plain("completed", "done\n")
        assert len(pumps) == 2
        monkeypatch.setattr(process_tool, "QUIET_SECONDS", 0.0)  # closed before it can end
        outcome = await make_tool().call(
            {"command": "sleep 0.2; printf out"}, make_context(workspace)
        )
        assert result_of(outcome) == plain("completed", "out")
        assert len(pumps) == 4


async def test_output_that_fills_the_pipes_within_the_quiet_window_is_all_kept(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, pumps: list[object]
) -> None:
    """More than a pipe holds: the writer waits for the window to close, then the pumps."""
    monkeypatch.setattr(process_tool, "QUIET_SECONDS", 0.5)
    command = "head -c 3000000 /dev/zero; head -c 2500000 /dev/zero >&2"
    with anyio.fail_after(30):
        outcome = await make_tool().call({"command": command}, make_context(workspace))
    data = result_of(outcome)
    assert (data["status"], data["stdoutTotalBytes"], data["stderrTotalBytes"]) == (
        "completed",
        3_000_000,
        2_500_000,
    )
    assert len(pumps) == 2


# --- background jobs, escaped grandchildren and stdin -----------------------------------------


async def test_a_background_job_holding_stdout_does_not_hang_a_finished_command(
    workspace: Path,
) -> None:
    with anyio.fail_after(30):
        outcome = await make_tool().call(
            {"command": "sleep 1000 & echo done"}, make_context(workspace)
        )
    assert result_of(outcome) == plain("completed", "done\n")


async def test_a_setsid_grandchild_holding_stdout_is_found_and_killed(workspace: Path) -> None:
    with anyio.fail_after(30):
        outcome = await make_tool().call(
            {"command": "setsid sleep 1000 & echo done"}, make_context(workspace)
        )
    assert result_of(outcome) == plain("completed", "done\n")


async def test_timeout_with_a_setsid_grandchild_holding_stdout(workspace: Path) -> None:
    command = "setsid sleep 1000 & touch ready; sleep 1000"
    with anyio.fail_after(30):
        outcome = await make_tool().call(
            {"command": command, "timeout_ms": 300}, make_context(workspace)
        )
    assert result_of(outcome) == plain("timed_out", exit_code=None, signal="SIGTERM")


async def test_cancel_with_a_setsid_grandchild_holding_stdout(workspace: Path) -> None:
    cancel = CancelSignal()
    command = "setsid sleep 1000 & sleep 1000 & touch ready; wait"
    result: list[ToolOutcome] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                result.append(await make_tool().call({"command": command}, context))

            context = make_context(workspace, cancel=cancel)
            tg.start_soon(run)
            await wait_for_file(workspace / "ready")
            cancel.cancel()
    assert result_of(result[0]) == plain("cancelled", exit_code=None, signal="SIGTERM")


async def test_stdin_is_empty_so_a_reading_command_finishes(workspace: Path) -> None:
    with anyio.fail_after(30):
        outcome = await make_tool().call(
            {"command": 'cat; read -r line; echo "[$line]"'}, make_context(workspace)
        )
    assert result_of(outcome) == plain("completed", "[]\n")


async def test_a_stdin_reader_that_then_hangs_times_out_promptly(workspace: Path) -> None:
    with anyio.fail_after(30):
        outcome = await make_tool().call(
            {"command": "cat - ; sleep 1000", "timeout_ms": 300}, make_context(workspace)
        )
    assert result_of(outcome) == plain("timed_out", exit_code=None, signal="SIGTERM")


@pytest.mark.parametrize(
    "command",
    [
        "sleep 1000 & touch ready; sleep 1000",
        "setsid sleep 1000 & touch ready; wait",
        "touch ready; read -r line; cat; sleep 1000",
    ],
    ids=["background-sleep", "setsid-grandchild", "stdin-reader"],
)
async def test_cancel_returns_promptly_and_leaves_no_process(
    workspace: Path, process_leak_guard: list[int], command: str
) -> None:
    cancel = CancelSignal()
    result: list[ToolOutcome] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                result.append(await make_tool().call({"command": command}, context))

            context = make_context(workspace, cancel=cancel)
            tg.start_soon(run)
            await wait_for_file(workspace / "ready")
            cancel.cancel()
    assert result_of(result[0]) == plain("cancelled", exit_code=None, signal="SIGTERM")
    assert len(process_leak_guard) == 1


async def test_cancel_after_the_command_finished_keeps_completed(
    workspace: Path, process_states: Sequence[str]
) -> None:
    """Exit was committed first; a cancel during the bounded drain only cleans up."""
    cancel = CancelSignal()
    states = process_states
    result: list[ToolOutcome] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                tool = make_tool(drain_grace_seconds=60.0)
                result.append(await tool.call({"command": "sleep 1000 & echo done"}, context))

            context = make_context(workspace, cancel=cancel)
            tg.start_soon(run)
            await poll_until(lambda: "completed" in states)
            cancel.cancel()
    assert result_of(result[0]) == plain("completed", "done\n")
    assert states == ["validating", "starting", "running", "completed"]


def test_precedence_cancel_over_timeout_over_output_over_exit() -> None:
    for offered, expected in [
        (["exit", "timeout", "cancel"], "cancel"),
        (["exit", "timeout"], "timeout"),
        (["exit", "output"], "output"),
        (["output", "timeout"], "timeout"),
        (["exit"], "exit"),
    ]:
        assert strongest(offered) == expected  # type: ignore[arg-type]


async def test_a_broken_output_stream_is_an_output_failure() -> None:
    """A pipe that errors (here: a real TCP stream reset by its peer) is an output failure: it
    ends the wait for the exit at once, and with the other stream already ended, the drain."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    streams = _Streams()
    streams.open = 1
    streams.drained = anyio.Event()
    streams.race = race = anyio.CancelScope()
    with anyio.fail_after(10):
        async with listener, await anyio.connect_tcp("127.0.0.1", port) as client:
            server = await listener.listeners[0].accept()  # type: ignore[attr-defined]
            raw = server.extra(anyio.abc.SocketAttribute.raw_socket)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            await server.send(b"partial")
            await server.aclose()
            await _pump(client, streams, streams.stdout)
    assert streams.failed
    assert race.cancel_called
    assert streams.open == 0
    assert streams.drained.is_set()


# --- working directory table ------------------------------------------------------------------


async def run_in(workspace: Path, cwd: str | None) -> ToolOutcome:
    arguments: dict[str, Any] = {"command": "pwd -P"}
    if cwd is not None:
        arguments["cwd"] = cwd
    with anyio.fail_after(30):
        return await make_tool().call(arguments, make_context(workspace))


async def test_cwd_absent_is_the_workspace_root(workspace: Path) -> None:
    assert result_of(await run_in(workspace, None)) == plain("completed", f"{workspace}\n")


async def test_cwd_dot_is_the_workspace_root(workspace: Path) -> None:
    assert result_of(await run_in(workspace, ".")) == plain("completed", f"{workspace}\n")


async def test_cwd_relative_subdirectory_resolves_inside(workspace: Path) -> None:
    (workspace / "a" / "b").mkdir(parents=True)
    expected = plain("completed", f"{workspace / 'a' / 'b'}\n", cwd="a/b")
    assert result_of(await run_in(workspace, "a/b")) == expected
    assert result_of(await run_in(workspace, "a/../a/b")) == expected


async def test_cwd_symlink_inside_the_workspace_is_followed(workspace: Path) -> None:
    (workspace / "real").mkdir()
    (workspace / "link").symlink_to(workspace / "real")
    expected = plain("completed", f"{workspace / 'real'}\n", cwd="real")
    assert result_of(await run_in(workspace, "link")) == expected


@pytest.mark.parametrize(
    ("cwd", "message"),
    [
        ("/tmp", "cwd refused: it must be relative to the workspace root"),
        ("..", "cwd refused: it leaves the workspace"),
        ("a/../../ws-sibling", "cwd refused: it leaves the workspace"),
        ("outside-link", "cwd refused: it leaves the workspace"),
        ("missing", "cwd refused: it does not exist"),
        ("file.txt", "cwd refused: it is not a directory"),
    ],
)
async def test_cwd_refusals_are_tool_failures(
    workspace: Path, process_leak_guard: list[int], cwd: str, message: str
) -> None:
    (workspace / "a").mkdir()
    (workspace.parent / "ws-sibling").mkdir()
    (workspace / "outside-link").symlink_to(workspace.parent / "ws-sibling")
    (workspace / "file.txt").write_text("x", encoding="utf-8")
    assert await run_in(workspace, cwd) == ToolOutcome(message, is_error=True)
    assert process_leak_guard == []


async def test_workspace_replaced_since_the_request_began_is_refused(
    workspace: Path, process_leak_guard: list[int]
) -> None:
    context = make_context(workspace)
    os.rename(workspace, workspace.parent / "moved")
    os.mkdir(workspace)
    with anyio.fail_after(30):
        outcome = await make_tool().call({"command": "touch made"}, context)
    assert outcome == ToolOutcome(
        "cwd refused: the workspace changed since the request began", is_error=True
    )
    assert process_leak_guard == []
    assert not (workspace / "made").exists()


# --- environment ------------------------------------------------------------------------------


async def test_the_command_runs_non_interactive_with_secrets_scrubbed(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_API_KEY", "secret")
    monkeypatch.setenv("PAGER", "less")
    command = (
        'echo "$PAGER|$GIT_PAGER|$GIT_TERMINAL_PROMPT|$EDITOR|$VISUAL|${SOME_API_KEY-unset}"; '
        "test -t 0 || echo no-tty"
    )
    with anyio.fail_after(30):
        outcome = await make_tool().call({"command": command}, make_context(workspace))
    assert result_of(outcome) == plain("completed", "cat|cat|0|true|true|unset\nno-tty\n")


# --- bounded output ---------------------------------------------------------------------------


def python_print(expression: str) -> str:
    """A command writing the bytes `expression` evaluates to, unbuffered."""
    return f'{sys.executable} -c "import sys; sys.stdout.buffer.write({expression})"'


async def test_long_output_keeps_head_and_tail_with_the_omitted_count(workspace: Path) -> None:
    command = python_print("b'a' * 20000 + b'b' * 20000")
    with anyio.fail_after(30):
        outcome = await make_tool().call({"command": command}, make_context(workspace))
    data = result_of(outcome)
    assert data["stdout"] == "a" * 16384 + "\n[… 7232 bytes omitted …]\n" + "b" * 16384
    assert data["stdoutTotalBytes"] == 40000
    assert data["stdoutOmitted"] == [16384, 23616]
    assert data["stderrOmitted"] is None


async def test_cuts_never_split_a_utf8_character(workspace: Path) -> None:
    command = python_print("'€'.encode() * 20000")
    with anyio.fail_after(30):
        outcome = await make_tool().call({"command": command}, make_context(workspace))
    data = result_of(outcome)
    assert data["stdout"] == "€" * 5461 + "\n[… 27234 bytes omitted …]\n" + "€" * 5461
    assert data["stdoutTotalBytes"] == 60000
    assert data["stdoutOmitted"] == [16383, 43617]


async def test_undecodable_bytes_become_replacement_characters(workspace: Path) -> None:
    with anyio.fail_after(30):
        outcome = await make_tool().call(
            {"command": r"printf '\377\376ok'"}, make_context(workspace)
        )
    data = result_of(outcome)
    assert data["stdout"] == "\ufffd\ufffdok"
    assert data["stdoutTotalBytes"] == 4


async def test_a_gigabyte_flood_keeps_memory_bounded(
    workspace: Path, with_peak_rss_growth: Callable[..., Awaitable[tuple[Any, int]]]
) -> None:
    total = 1_000_000_000
    with anyio.fail_after(110):
        outcome, growth = await with_peak_rss_growth(
            lambda: make_tool().call({"command": f"yes | head -c {total}"}, make_context(workspace))
        )
    assert growth < 200 * 1024 * 1024
    data = result_of(outcome)
    omitted = total - 2 * 16384
    assert data["stdout"] == "y\n" * 8192 + f"\n[… {omitted} bytes omitted …]\n" + "y\n" * 8192
    assert data["stdoutTotalBytes"] == total
    assert data["stdoutOmitted"] == [16384, total - 16384]
    assert data["status"] == "completed"


async def test_a_setsid_grandchild_with_closed_pipes_does_not_outlive_the_call(
    workspace: Path,
) -> None:
    command = "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo done"
    with anyio.fail_after(30):
        outcome = await make_tool().call({"command": command}, make_context(workspace))
    assert result_of(outcome) == plain("completed", "done\n")


async def test_an_outer_cancel_without_the_signal_still_leaves_no_process(
    workspace: Path,
) -> None:
    """The host cancels the call's task itself (e.g. at exit): teardown and sweep still run."""
    command = "(setsid sleep 1000 </dev/null >/dev/null 2>&1 &); touch ready; sleep 1000"
    finished: list[bool] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                await make_tool().call({"command": command}, make_context(workspace))
                finished.append(True)

            tg.start_soon(run)
            await wait_for_file(workspace / "ready")
            tg.cancel_scope.cancel()
    assert finished == []


ESCAPES = {
    "fifty-setsid-sleepers": "for i in $(seq 50); do setsid sleep 1000 & done; echo started",
    "double-fork-daemon-holding-stdout": "(setsid sh -c 'sleep 1000 & exit 0' &); echo started",
    "double-fork-daemon-closing-stdout": (
        "(setsid sh -c 'sleep 1000 </dev/null >/dev/null 2>&1 & exit 0' &); echo started"
    ),
    "env-cleared-daemon": "(env -i /bin/sh -c 'setsid sleep 1000 </dev/null >/dev/null 2>&1 &'); echo started",
    "term-trapping-grandchild": "(trap '' TERM; exec setsid sleep 1000) & echo started",
}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux containment")
@pytest.mark.parametrize("command", list(ESCAPES.values()), ids=list(ESCAPES))
async def test_nothing_a_call_started_outlives_it(
    workspace: Path, process_leak_guard: list[int], command: str
) -> None:
    """The shell exits at once; whatever it left behind is gone when the call returns."""
    with anyio.fail_after(30):
        outcome = await make_tool().call({"command": command}, make_context(workspace))
    data = result_of(outcome)
    assert (data["status"], data["exitCode"], data["stdout"]) == ("completed", 0, "started\n")
    assert len(process_leak_guard) == 1
