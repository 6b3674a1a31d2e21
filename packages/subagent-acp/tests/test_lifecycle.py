"""start → prompt → result → dispose over real stdio, as acp.md lists it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import (
    CancelSignal,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
)
from subagent_core.kit import ChildStderr
from subagent_core.testing import live_group_members, track_spawns

ABORTED_TEXT = "subagent request was aborted before the ACP child started"


def registry_with(config: ACPConfig) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    return registry


# -- output and mapping -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("acp_reason", "stop_reason"),
    [
        ("end_turn", "completed"),
        ("max_tokens", "max-tokens"),
        ("refusal", "refusal"),
        ("cancelled", "aborted"),
        ("max_turn_requests", "error"),
        ("something_new", "error"),
    ],
)
async def test_stop_reason_mapping_over_stdio(
    make_config, run_once, acp_reason: str, stop_reason: str
) -> None:
    result, _ = await run_once(make_config({"text": "out", "stop_reason": acp_reason}))
    assert (result.stop_reason, result.output) == (stop_reason, "out")


async def test_only_message_text_reaches_the_output(make_config, run_once) -> None:
    script = {
        "thought": "THOUGHT-TEXT",
        "tool_call": True,
        "plan": True,
        "image_chunk": True,
        "text": "alpha beta gamma",
        "chunks": 5,
    }
    result, _ = await run_once(make_config(script))
    assert result == SubagentResult(stop_reason="completed", output="alpha beta gamma")


async def test_twenty_thousand_chunks_concatenate_without_separators(make_config, run_once) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(20_000))
    result, _ = await run_once(make_config({"text": text, "chunks": 20_000}))
    assert result.output == text


# -- environment --------------------------------------------------------------------------------


async def test_env_is_scrubbed_and_explicit_values_win(
    make_config, run_once, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARENT_SECRET_TOKEN", "ambient-secret")
    monkeypatch.setenv("DSH_AMBIENT", "ambient-dsh")
    monkeypatch.setenv("PLAIN_AMBIENT", "removed-explicitly")
    names = [
        "PARENT_SECRET_TOKEN",
        "DSH_AMBIENT",
        "PLAIN_AMBIENT",
        "DEEPSEEK_API_KEY",
        "DSH_MODE",
        "PATH",
    ]
    config = make_config(
        {"echo_env": names},
        env={"DEEPSEEK_API_KEY": "explicit-key", "DSH_MODE": "explicit-dsh", "PLAIN_AMBIENT": None},
    )
    result, _ = await run_once(config)
    assert result.output == (
        "PARENT_SECRET_TOKEN unset\n"
        "DSH_AMBIENT unset\n"
        "PLAIN_AMBIENT unset\n"
        "DEEPSEEK_API_KEY=explicit-key\n"
        "DSH_MODE=explicit-dsh\n"
        f"PATH={os.environ['PATH']}\n"
    )


# -- cwd rules ----------------------------------------------------------------------------------


async def test_config_cwd_wins_over_the_request(make_config, run_once, tmp_path: Path) -> None:
    configured = tmp_path / "configured"
    requested = tmp_path / "requested"
    configured.mkdir()
    requested.mkdir()
    config = make_config({"echo_cwd": True, "echo_session_cwd": True}, cwd=configured)
    result, _ = await run_once(config, SubagentRequest(prompt="go", cwd=requested))
    assert result.output == f"{configured}{configured}"


async def test_request_cwd_is_used_without_config(make_config, run_once, tmp_path: Path) -> None:
    config = make_config({"echo_cwd": True, "echo_session_cwd": True}, cwd=None)
    result, _ = await run_once(config, SubagentRequest(prompt="go", cwd=tmp_path))
    assert result.output == f"{tmp_path}{tmp_path}"


def test_relative_config_cwd_is_resolved_at_construction(
    make_config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path)
    config = make_config(cwd="work")
    monkeypatch.chdir("/")
    assert config.cwd == tmp_path / "work"


@pytest.mark.parametrize("kind", ["empty", "missing", "file"])
def test_bad_config_cwd_is_rejected(make_config, tmp_path: Path, kind: str) -> None:
    file = tmp_path / "file.txt"
    file.write_text("x", "utf-8")
    cwd = {"empty": "", "missing": str(tmp_path / "nope"), "file": str(file)}[kind]
    with pytest.raises(ValueError, match=r"ACPConfig\.cwd"):
        make_config(cwd=cwd)


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="root passes every access check"
)
def test_unenterable_config_cwd_is_rejected(make_config, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o600)
    try:
        with pytest.raises(ValueError, match=r"ACPConfig\.cwd"):
            make_config(cwd=locked)
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("kind", ["none", "empty", "relative", "missing", "file"])
async def test_bad_request_cwd_fails_before_spawn(make_config, tmp_path: Path, kind: str) -> None:
    file = tmp_path / "file.txt"
    file.write_text("x", "utf-8")
    cwd = {
        "none": None,
        "empty": Path(""),
        "relative": Path("relative/dir"),
        "missing": tmp_path / "nope",
        "file": file,
    }[kind]
    registry = registry_with(make_config(cwd=None))
    with (
        anyio.fail_after(30),
        track_spawns() as spawned,
        pytest.raises(SubagentStartError) as caught,
    ):
        await registry.start("acp", SubagentRequest(prompt="go", cwd=cwd))
    assert spawned == []
    assert caught.value.diagnostic == (
        "Subagent failure (provider: acp; stage: initialize; category: configuration)"
    )


async def test_configured_cwd_that_vanished_fails_before_spawn(make_config, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    registry = registry_with(make_config(cwd=workspace))
    workspace.rmdir()
    with (
        anyio.fail_after(30),
        track_spawns() as spawned,
        pytest.raises(SubagentStartError) as caught,
    ):
        await registry.start("acp", SubagentRequest(prompt="go", cwd=tmp_path))
    assert spawned == []
    expected = "Subagent failure (provider: acp; stage: initialize; category: configuration)"
    assert (str(caught.value), caught.value.diagnostic) == (expected, expected)


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="root passes every access check"
)
async def test_unenterable_request_cwd_fails_before_spawn(make_config, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o600)
    try:
        registry = registry_with(make_config(cwd=None))
        with anyio.fail_after(30), track_spawns() as spawned, pytest.raises(SubagentStartError):
            await registry.start("acp", SubagentRequest(prompt="go", cwd=locked))
        assert spawned == []
    finally:
        locked.chmod(0o700)


# -- identity and dispose -----------------------------------------------------------------------


async def test_run_id_is_ours_and_unique(make_config) -> None:
    registry = registry_with(make_config({"session_id": "child-session"}))
    ids = []
    with anyio.fail_after(60):
        for _ in range(2):
            run = await registry.start("acp", SubagentRequest(prompt="go"))
            async with run:
                await run.result()
            ids.append(run.id)
    assert "child-session" not in ids
    assert len(set(ids)) == 2
    assert all(len(run_id) == 36 for run_id in ids)


async def test_concurrent_dispose_calls_share_one_outcome(make_config) -> None:
    registry = registry_with(make_config({"hang_at": "prompt", "ignore_eof": True}))
    outcomes: list[str | None] = []
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))

        async def dispose() -> None:
            outcomes.append(await run.dispose())

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(dispose)
    assert outcomes == [None, None, None]


async def test_cancelled_dispose_caller_still_tears_down(make_config) -> None:
    registry = registry_with(make_config({"hang_at": "prompt", "ignore_eof": True}))
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        with anyio.move_on_after(0.05):
            await run.dispose()
        assert await run.dispose() is None
    # the leak guard proves the tree is gone


# -- cancellation -------------------------------------------------------------------------------


async def test_hang_then_cancel_is_aborted_with_partial_output(
    make_config, tmp_path: Path, wait_for_path
) -> None:
    marker = tmp_path / "prompted"
    script = {
        "text": "partial",
        "hang_at": "prompt",
        "markers": [{"at": "prompt_output", "path": str(marker)}],
    }
    registry = registry_with(make_config(script))
    cancel = CancelSignal()
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go", cancel=cancel))
        async with run:
            await wait_for_path(marker)
            cancel.cancel()
            result = await run.result()
    assert result == SubagentResult(stop_reason="aborted", output="partial")


async def test_local_cancel_does_not_signal_the_process(
    make_config, tmp_path: Path, wait_for_path, process_leak_guard: list[int]
) -> None:
    prompted = tmp_path / "prompted"
    cancelled = tmp_path / "cancel-seen"
    eof = tmp_path / "eof-seen"
    script = {
        "hang_at": "prompt",
        "markers": [
            {"at": "prompt", "path": str(prompted)},
            {"at": "cancel", "path": str(cancelled)},
            {"at": "eof", "path": str(eof)},
        ],
    }
    registry = registry_with(make_config(script))
    cancel = CancelSignal()
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go", cancel=cancel))
        await wait_for_path(prompted)
        cancel.cancel()
        assert await run.result() == SubagentResult(stop_reason="aborted")
        await wait_for_path(cancelled)
        # Settled, asked to stop, but neither signalled nor given EOF until dispose().
        [pgid] = process_leak_guard
        assert live_group_members(pgid) != []
        assert not eof.exists()
        assert await run.dispose() is None
    assert eof.exists()
    assert live_group_members(pgid) == []


async def test_dispose_sends_a_best_effort_session_cancel(
    make_config, tmp_path: Path, wait_for_path
) -> None:
    import json

    record = tmp_path / "received.jsonl"
    prompted = tmp_path / "prompted"
    script = {
        "record_file": str(record),
        "hang_at": "prompt",
        "session_id": "s-2",
        "markers": [{"at": "prompt", "path": str(prompted)}],
    }
    registry = registry_with(make_config(script))
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        await wait_for_path(prompted)
        assert await run.dispose() is None
        assert await run.result() == SubagentResult(stop_reason="aborted")
    received = [json.loads(line) for line in record.read_text("utf-8").splitlines()]
    assert received[-1] == {
        "jsonrpc": "2.0",
        "method": "session/cancel",
        "params": {"sessionId": "s-2"},
    }


async def test_child_stderr_is_drained_never_passed_through_and_never_read(
    make_config, run_once, capfd: pytest.CaptureFixture[str]
) -> None:
    script = {"stderr": {"text": "STDERR-FROM-CHILD\n", "bytes": 18}, "text": "ok"}
    result, _ = await run_once(make_config(script))
    assert result == SubagentResult(stop_reason="completed", output="ok")
    assert "STDERR-FROM-CHILD" not in capfd.readouterr().err


async def test_child_stderr_goes_to_its_log_and_live_only_when_asked(
    make_config, run_once, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    script = {"stderr": {"text": "STDERR-FROM-CHILD\n", "bytes": 18}, "text": "ok"}
    logs = tmp_path / "logs"
    config = make_config(script, child_stderr=ChildStderr(log_dir=logs, live=True))
    result, _ = await run_once(config)
    assert result == SubagentResult(stop_reason="completed", output="ok")
    assert capfd.readouterr().err == "STDERR-FROM-CHILD\n"
    assert [log.read_text("utf-8") for log in logs.iterdir()] == ["STDERR-FROM-CHILD\n"]


async def test_warm_children_drain_their_stderr_too(
    make_config, registry_for, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    script = {"stderr": {"text": "WARM-STDERR\n", "bytes": 12}, "text": "ok"}
    logs = tmp_path / "logs"
    config = make_config(script, prewarm=1, child_stderr=ChildStderr(log_dir=logs))
    registry = registry_for(config)
    with anyio.fail_after(60):
        async with registry:
            run = await registry.start("acp", SubagentRequest(prompt="go"))
            async with run:
                assert await run.result() == SubagentResult(stop_reason="completed", output="ok")
    assert "WARM-STDERR" not in capfd.readouterr().err
    # The used child's log whole; its replacement's too when it wrote before the close (the
    # close may kill it at any point of its start, so a log of it holds what it got to write).
    texts = [log.read_text("utf-8") for log in logs.iterdir()]
    assert "WARM-STDERR\n" in texts
    assert all("WARM-STDERR\n".startswith(text) for text in texts), texts


async def test_pre_cancelled_spawns_nothing(make_config, tmp_path: Path) -> None:
    sentinel = tmp_path / "sentinel"
    config = make_config(command="touch", args=[str(sentinel)])
    cancel = CancelSignal()
    cancel.cancel()
    registry = registry_with(config)
    with (
        anyio.fail_after(30),
        track_spawns() as spawned,
        pytest.raises(SubagentStartError) as caught,
    ):
        await registry.start("acp", SubagentRequest(prompt="go", cancel=cancel))
    assert (str(caught.value), caught.value.diagnostic) == (ABORTED_TEXT, None)
    assert spawned == []
    assert not sentinel.exists()


async def test_cancel_during_new_session_is_an_aborted_start(
    make_config, tmp_path: Path, wait_for_path
) -> None:
    marker = tmp_path / "in-new-session"
    script = {"hang_at": "new_session", "markers": [{"at": "new_session", "path": str(marker)}]}
    registry = registry_with(make_config(script))
    cancel = CancelSignal()
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:

            async def cancel_when_ready() -> None:
                await wait_for_path(marker)
                cancel.cancel()

            tg.start_soon(cancel_when_ready)
            with pytest.raises(SubagentStartError) as caught:
                await registry.start("acp", SubagentRequest(prompt="go", cancel=cancel))
    assert (str(caught.value), caught.value.diagnostic) == (ABORTED_TEXT, None)


async def test_crash_on_cancel_is_still_aborted(make_config, tmp_path: Path, wait_for_path) -> None:
    marker = tmp_path / "prompted"
    script = {
        "hang_at": "prompt",
        "crash": {"at": "cancel", "exit_code": 9},
        "markers": [{"at": "prompt_output", "path": str(marker)}],
    }
    registry = registry_with(make_config(script))
    cancel = CancelSignal()
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go", cancel=cancel))
        async with run:
            await wait_for_path(marker)
            cancel.cancel()
            result = await run.result()
            assert await run.dispose() is None
    assert result == SubagentResult(stop_reason="aborted")


async def test_ignored_cancel_settles_promptly_and_dispose_reaps(
    make_config, tmp_path: Path, wait_for_path
) -> None:
    prompted = tmp_path / "prompted"
    cancelled = tmp_path / "cancel-seen"
    script = {
        "hang_at": "prompt",
        "ignore_cancel": True,
        "ignore_eof": True,
        "markers": [
            {"at": "prompt", "path": str(prompted)},
            {"at": "cancel", "path": str(cancelled)},
        ],
    }
    registry = registry_with(make_config(script))
    cancel = CancelSignal()
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go", cancel=cancel))
        await wait_for_path(prompted)
        cancel.cancel()
        result = await run.result()
        assert result == SubagentResult(stop_reason="aborted")
        await wait_for_path(cancelled)  # the best-effort session/cancel was sent
        assert await run.dispose() is None


# -- the ladder ---------------------------------------------------------------------------------


async def test_missing_session_id_fails_after_the_eof_marker(make_config, tmp_path: Path) -> None:
    marker = tmp_path / "eof-flushed"
    script = {"omit_session_id": True, "eof_marker": {"path": str(marker), "delay_seconds": 0.1}}
    registry = registry_with(make_config(script, dispose_eof_grace_seconds=5.0))
    with anyio.fail_after(60), pytest.raises(SubagentStartError) as caught:
        await registry.start("acp", SubagentRequest(prompt="go"))
    assert caught.value.diagnostic == (
        "Subagent failure (provider: acp; stage: new-session; category: protocol)"
    )
    assert marker.read_text("utf-8") == "flushed"


async def test_eof_flushing_child_gets_its_eof_grace(make_config, tmp_path: Path) -> None:
    marker = tmp_path / "eof-flushed"
    script = {"eof_marker": {"path": str(marker), "delay_seconds": 0.2}}
    registry = registry_with(make_config(script, dispose_eof_grace_seconds=5.0))
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        await run.result()
        assert await run.dispose() is None
    assert marker.read_text("utf-8") == "flushed"


async def test_eof_deaf_child_gets_sigterm(make_config, tmp_path: Path) -> None:
    marker = tmp_path / "saw-eof"
    script = {"ignore_eof": True, "markers": [{"at": "eof", "path": str(marker)}]}
    registry = registry_with(make_config(script))
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        await run.result()
        assert await run.dispose() is None
    assert marker.exists()  # it saw EOF and stayed: only SIGTERM ended it


async def test_sigterm_trapping_child_is_killed(make_config, tmp_path: Path) -> None:
    marker = tmp_path / "saw-eof"
    script = {
        "ignore_eof": True,
        "trap_sigterm": True,
        "markers": [{"at": "eof", "path": str(marker)}],
    }
    registry = registry_with(make_config(script))
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        await run.result()
        assert await run.dispose() is None  # only SIGKILL can end this child
    assert marker.exists()


async def test_deaf_trapping_child_is_disposed_fast_with_default_graces(
    make_config, tmp_path: Path
) -> None:
    """The default graces end a finished run whose child ignores EOF and traps SIGTERM quickly.

    Real agents ignore stdin EOF; with the old 6 s + 3 s graces every dispose of their runs
    waited 9 s after the answer was in hand. The bound is generous for a loaded machine; the
    figure itself is measured in bench/.
    """
    defaults = ACPConfig(command="x")
    script = {"ignore_eof": True, "trap_sigterm": True, "text": "done"}
    config = make_config(
        script,
        dispose_eof_grace_seconds=defaults.dispose_eof_grace_seconds,
        dispose_grace_seconds=defaults.dispose_grace_seconds,
        dispose_kill_grace_seconds=defaults.dispose_kill_grace_seconds,
    )
    registry = registry_with(config)
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        result = await run.result()
        with anyio.fail_after(
            defaults.dispose_eof_grace_seconds + defaults.dispose_grace_seconds + 4.0
        ):
            assert await run.dispose() is None
    assert (result.stop_reason, result.output) == ("completed", "done")


async def test_grandchild_holding_stdout_is_torn_down(make_config, run_once) -> None:
    script = {"grandchild": True, "grandchild_setsid": True, "ignore_eof": True, "text": "ok"}
    result, disposed = await run_once(make_config(script))
    assert (result.stop_reason, result.output, disposed) == ("completed", "ok", None)


async def test_crash_with_grandchild_holding_stdout_is_process_exit(make_config, run_once) -> None:
    script = {
        "grandchild": True,
        "crash": {"at": "after_prompt_output", "exit_code": 6},
        "text": "p",
    }
    result, disposed = await run_once(make_config(script))
    assert result == SubagentResult(
        stop_reason="error",
        output="p",
        diagnostic="Subagent failure (provider: acp; stage: process; category: process-exit; exit code: 6)",
    )
    assert disposed is None


# -- permissions --------------------------------------------------------------------------------


async def test_reject_answers_cancelled(make_config, run_once) -> None:
    result, _ = await run_once(make_config({"permission": {"tool_kind": "execute"}}))
    assert result.output == "[permission cancelled]"


async def test_allow_selects_allow_once_even_after_an_allow_always(make_config, run_once) -> None:
    """An `allow_always` offered first is passed over: the policy grants this request only."""
    options = [
        {"optionId": "no", "name": "No", "kind": "reject_once"},
        {"optionId": "always", "name": "Always", "kind": "allow_always"},
        {"optionId": "once", "name": "Once", "kind": "allow_once"},
    ]
    script = {"permission": {"tool_kind": "edit", "options": options}}
    result, _ = await run_once(make_config(script, permission="allow"))
    assert result.output == "[permission selected once]"


async def test_allow_selects_allow_always_when_it_is_the_only_allow(make_config, run_once) -> None:
    options = [
        {"optionId": "no", "name": "No", "kind": "reject_once"},
        {"optionId": "always", "name": "Always", "kind": "allow_always"},
    ]
    script = {"permission": {"tool_kind": "edit", "options": options}}
    result, _ = await run_once(make_config(script, permission="allow"))
    assert result.output == "[permission selected always]"


async def test_allow_without_allow_options_answers_cancelled(make_config, run_once) -> None:
    options = [
        {"optionId": "no", "name": "No", "kind": "reject_once"},
        {"optionId": "never", "name": "Never", "kind": "reject_always"},
    ]
    script = {"permission": {"tool_kind": "edit", "options": options}, "stop_reason": "refusal"}
    result, _ = await run_once(make_config(script, permission="allow"))
    assert result == SubagentResult(
        stop_reason="refusal",
        output="[permission cancelled]",
        diagnostic="ACP permission (policy: allow; tool kind: edit; decision: cancelled)",
    )


# -- process failures ---------------------------------------------------------------------------


async def test_crash_on_prompt_is_process_exit(make_config, run_once) -> None:
    result, _ = await run_once(make_config({"crash": {"at": "prompt", "exit_code": 17}}))
    assert result == SubagentResult(
        stop_reason="error",
        diagnostic="Subagent failure (provider: acp; stage: process; category: process-exit; exit code: 17)",
    )


async def test_broken_pipe_to_a_dead_child_is_process_exit(make_config, run_once) -> None:
    result, _ = await run_once(make_config({"crash": {"at": "after_new_session", "exit_code": 5}}))
    assert result.diagnostic == (
        "Subagent failure (provider: acp; stage: process; category: process-exit; exit code: 5)"
    )


async def test_broken_pipe_to_a_live_child_is_prompt_transport(make_config, run_once) -> None:
    result, disposed = await run_once(make_config({"close_stdin_at": "new_session"}))
    assert result == SubagentResult(
        stop_reason="error",
        diagnostic="Subagent failure (provider: acp; stage: prompt; category: transport)",
    )
    assert disposed is None


# -- registry -----------------------------------------------------------------------------------


async def test_reregistering_while_a_run_is_live(
    make_config, tmp_path: Path, wait_for_path
) -> None:
    marker = tmp_path / "prompted"
    gate = tmp_path / "gate"
    script = {
        "text": "still here",
        "gate_file": str(gate),
        "markers": [{"at": "prompt", "path": str(marker)}],
    }
    registry = SubagentRegistry()
    unregister = registry.register(ACPProvider(make_config(script)))
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        async with run:
            await wait_for_path(marker)  # the prompt is in flight
            unregister()
            assert registry.names() == []
            registry.register(ACPProvider(make_config({"text": "fresh"})))
            await anyio.Path(gate).touch()
            result = await run.result()
        second = await registry.start("acp", SubagentRequest(prompt="go"))
        async with second:
            fresh = await second.result()
    assert result == SubagentResult(stop_reason="completed", output="still here")
    assert fresh == SubagentResult(stop_reason="completed", output="fresh")


def test_provider_advertises_nothing_it_cannot_enforce(make_config) -> None:
    from subagent_core import Capabilities, SubagentProvider

    provider = ACPProvider(make_config(provider_name="remote"))
    assert isinstance(provider, SubagentProvider)
    assert provider.name == "remote"
    assert provider.capabilities == Capabilities(sessions=True, resume=True)
    assert provider.inherits_parent_context is False


async def test_gated_requests_are_refused_before_spawn(make_config) -> None:
    from subagent_core import SubagentError

    registry = registry_with(make_config())
    with anyio.fail_after(30), track_spawns() as spawned, pytest.raises(SubagentError) as caught:
        await registry.start("acp", SubagentRequest(prompt="go", max_depth=1))
    assert caught.value.code == "UNSUPPORTED_CAPABILITY"
    assert spawned == []


async def test_the_client_wire_is_minimal(make_config, tmp_path: Path, wait_for_path) -> None:
    """No client capabilities, the resolved cwd, no MCP servers, one text block, session/cancel."""
    import json

    from acp import PROTOCOL_VERSION

    record = tmp_path / "received.jsonl"
    prompted = tmp_path / "prompted"
    cancelled = tmp_path / "cancelled"
    script = {
        "record_file": str(record),
        "hang_at": "prompt",
        "markers": [
            {"at": "prompt", "path": str(prompted)},
            {"at": "cancel", "path": str(cancelled)},
        ],
        "session_id": "s-1",
    }
    registry = registry_with(make_config(script))
    cancel = CancelSignal()
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="do the thing", cancel=cancel))
        async with run:
            await wait_for_path(prompted)
            cancel.cancel()
            assert (await run.result()).stop_reason == "aborted"
            await wait_for_path(cancelled)
    received = [json.loads(line) for line in record.read_text("utf-8").splitlines()]
    assert [(m.get("method"), m.get("params")) for m in received] == [
        ("initialize", {"protocolVersion": PROTOCOL_VERSION}),
        ("session/new", {"cwd": str(tmp_path), "mcpServers": []}),
        (
            "session/prompt",
            {"sessionId": "s-1", "prompt": [{"type": "text", "text": "do the thing"}]},
        ),
        ("session/cancel", {"sessionId": "s-1"}),
    ]
