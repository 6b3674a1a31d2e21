"""Hostile app-servers on the stdlib fake: floods, garbage, an over-long line, stray responses,
death mid-frame, an approval storm and unknown requests each settle classified; a secret in
the parent's environment or on the child's stderr never passes through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from subagent_core import PermissionEvent


async def test_a_flood_of_unknown_notifications_is_read_through(
    fake_config, run_once, completed_turn
) -> None:
    result, _, _ = await run_once(fake_config({"turn": [{"flood": 20000}, *completed_turn()]}))
    assert (result.stop_reason, result.output) == ("completed", "done")


async def test_garbage_is_protocol(fake_config, run_once, failure_line) -> None:
    scenario = {"turn": [{"delta": "part"}, {"garbage": "sk-SECRET not json"}, {"hang": True}]}
    result, disposed, _ = await run_once(fake_config(scenario))
    assert (result.stop_reason, result.output) == ("error", "part")
    assert result.diagnostic == failure_line("prompt", "protocol")
    assert disposed is None


async def test_an_over_long_line_is_transport(fake_config, run_once, failure_line) -> None:
    scenario = {"turn": [{"huge": 100_000}, {"hang": True}]}
    result, _, _ = await run_once(fake_config(scenario, max_frame_bytes=4096))
    assert result.diagnostic == failure_line("prompt", "transport")


async def test_duplicate_and_late_responses_are_dropped(
    fake_config, run_once, completed_turn
) -> None:
    scenario = {"turn": [{"duplicate": True}, {"late": 777}, {"late": "x"}, *completed_turn()]}
    result, _, _ = await run_once(fake_config(scenario))
    assert (result.stop_reason, result.output) == ("completed", "done")


async def test_death_mid_frame_is_process_exit(fake_config, run_once, failure_line) -> None:
    result, disposed, _ = await run_once(fake_config({"turn": [{"delta": "part"}, {"die": 3}]}))
    assert (result.stop_reason, result.output) == ("error", "part")
    assert result.diagnostic == failure_line("process", "process-exit", "; exit code: 3")
    assert disposed is None


async def test_exit_zero_before_the_turn_ends_is_process_exit(
    fake_config, run_once, failure_line
) -> None:
    result, _, _ = await run_once(fake_config({"turn": [{"exit": 0}]}))
    assert result.diagnostic == failure_line("process", "process-exit", "; exit code: 0")


async def test_an_approval_storm_is_answered_in_bounds(
    fake_config, run_once, completed_turn
) -> None:
    """200 requests at once: 64 queue for the gate, the rest are refused with an error."""
    scenario = {"turn": [{"approval": "command", "count": 200}, *completed_turn()]}
    result, _, events = await run_once(fake_config(scenario, permission={"*": "reject"}))
    assert result.stop_reason == "completed"
    assert result.diagnostic == (
        "Codex permission (policy: reject; tool kind: execute; decision: reject_once)"
    )
    decided = [e for e in events if isinstance(e, PermissionEvent)]
    assert 1 <= len(decided) <= 200


async def test_an_unknown_server_request_is_refused_and_the_run_goes_on(
    fake_config, run_once, completed_turn, tmp_path: Path
) -> None:
    answers = tmp_path / "answers.jsonl"
    scenario = {
        "answers_to": str(answers),
        "turn": [{"request": "item/tool/call"}, {"request": "sk-SECRET/x"}, *completed_turn()],
    }
    result, _, _ = await run_once(fake_config(scenario))
    assert (result.stop_reason, result.output, result.diagnostic) == ("completed", "done", None)
    sent = [json.loads(line) for line in answers.read_text(encoding="utf-8").splitlines()]
    assert [a["error"]["code"] for a in sent] == [-32601, -32601]


async def test_an_inherited_openai_key_never_reaches_the_child(
    fake_config, run_once, completed_turn, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-inherited")
    dump = tmp_path / "env.json"
    result, _, _ = await run_once(fake_config({"turn": [{"env_to": str(dump)}, *completed_turn()]}))
    assert result.stop_reason == "completed"
    assert "OPENAI_API_KEY" not in json.loads(dump.read_text(encoding="utf-8"))
    config = fake_config(
        {"turn": [{"env_to": str(dump)}, *completed_turn()]}, env={"OPENAI_API_KEY": "sk-given"}
    )
    await run_once(config)
    assert json.loads(dump.read_text(encoding="utf-8"))["OPENAI_API_KEY"] == "sk-given"


async def test_stderr_is_drained_into_its_log_and_never_passed_through(
    fake_config, run_once, completed_turn, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from subagent_codex.testing import fake_app_server_argv
    from subagent_core.kit import ChildStderr

    secret = "sk-codex-stderr-secret-9"
    # `sh` writes the line as the app-server would, then becomes the fake (same pid and pipe).
    wrapper = f'echo "token={secret}" >&2; exec "$@"'
    logs = tmp_path / "logs"
    config = fake_config(
        {"turn": completed_turn("hello")},
        command="/bin/sh",
        args=["-c", wrapper, "sh", *fake_app_server_argv()],
        child_stderr=ChildStderr(log_dir=logs),
    )
    result, disposed, _ = await run_once(config)
    assert (result.stop_reason, result.output, disposed) == ("completed", "hello", None)
    assert secret not in capfd.readouterr().err
    assert [log.read_text("utf-8") for log in logs.iterdir()] == [f"token={secret}\n"]
