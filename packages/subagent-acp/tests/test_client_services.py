"""The parent as a full ACP client: workspace files, terminals, permission callbacks, session
options — each over real stdio with the fake child asking for it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import psutil
import pytest
from subagent_acp import ACPProvider
from subagent_core import (
    PermissionAsk,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
)
from subagent_core.testing import poll_until

OUTSIDE = "[read -> -32602 path is outside the workspace]"


async def run_request(config, request: SubagentRequest | None = None) -> SubagentResult:
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    with anyio.fail_after(60):
        run = await registry.start("acp", request or SubagentRequest(prompt="go"))
        async with run:
            result = await run.result()
            assert await run.dispose() is None
    return result


def received(record: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in record.read_text("utf-8").splitlines()]


# -- capabilities ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, (False, False, False)),
        ({"fs": "read"}, (True, False, False)),
        ({"fs": "read-write", "terminal": True}, (True, True, True)),
    ],
)
async def test_initialize_advertises_exactly_the_offered_services(
    make_config, tmp_path: Path, fields, expected
) -> None:
    record = tmp_path / "record.jsonl"
    await run_request(make_config({"record_file": str(record)}, **fields))
    initialize = received(record)[0]
    assert initialize["method"] == "initialize"
    capabilities = initialize["params"].get("clientCapabilities") or {}  # type: ignore[union-attr]
    fs = capabilities.get("fs") or {}
    advertised = (
        fs.get("readTextFile", False),
        fs.get("writeTextFile", False),
        capabilities.get("terminal", False),
    )
    assert advertised == expected


# -- file system -------------------------------------------------------------------------------


async def test_reads_inside_the_workspace(make_config, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("one\ntwo\nthree\n", "utf-8")
    ops = [
        {"op": "read", "path": str(notes)},
        {"op": "read", "path": str(notes), "line": 2, "limit": 1},
        {"op": "read", "path": str(tmp_path / "missing.txt")},
    ]
    result = await run_request(make_config({"fs_ops": ops}, fs="read"))
    assert result == SubagentResult(
        stop_reason="completed",
        output="[read -> ok one\ntwo\nthree\n][read -> ok two\n][read -> -32002 Resource not found]",
    )


async def test_escapes_are_refused_with_fixed_text(make_config, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET", "utf-8")
    (workspace / "link").symlink_to(secret)
    (workspace / "dirlink").symlink_to(tmp_path)
    ops = [
        {"op": "read", "path": str(workspace / ".." / "secret.txt")},
        {"op": "read", "path": str(workspace / "link")},
        {"op": "read", "path": str(workspace / "dirlink" / "secret.txt")},
        {"op": "read", "path": str(secret)},
        {"op": "read", "path": "secret.txt"},
        {"op": "read", "path": "/etc/hostname"},
    ]
    result = await run_request(make_config({"fs_ops": ops}, fs="read", cwd=workspace))
    assert result.output == OUTSIDE * len(ops)
    assert "SECRET" not in result.output


async def test_writes_inside_the_workspace_when_allowed(make_config, tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old contents that are longer", "utf-8")
    ops = [
        {"op": "write", "path": str(target), "content": "new"},
        {"op": "write", "path": str(tmp_path / "fresh.txt"), "content": "权限"},
    ]
    config = make_config({"fs_ops": ops}, fs="read-write", permission="allow")
    result = await run_request(config, SubagentRequest(prompt="go", allow_writes=True))
    assert result == SubagentResult(stop_reason="completed", output="[write -> ok]" * 2)
    assert target.read_text("utf-8") == "new"
    assert (tmp_path / "fresh.txt").read_text("utf-8") == "权限"


async def test_a_file_the_child_may_create_reads_as_empty_text(make_config, tmp_path: Path) -> None:
    """Read before write, as gemini-cli's write tool does: with writes allowed, a missing file
    in an existing workspace directory is empty text; a missing directory, or a parent that
    allows no writes, still answers -32002."""
    ops = [
        {"op": "read", "path": str(tmp_path / "new.txt")},
        {"op": "read", "path": str(tmp_path / "no-such-dir" / "new.txt")},
        {"op": "write", "path": str(tmp_path / "new.txt"), "content": "made"},
    ]
    config = make_config({"fs_ops": ops}, fs="read-write", permission="allow")
    result = await run_request(config, SubagentRequest(prompt="go", allow_writes=True))
    assert result == SubagentResult(
        stop_reason="completed",
        output="[read -> ok ][read -> -32002 Resource not found][write -> ok]",
    )
    assert (tmp_path / "new.txt").read_text("utf-8") == "made"
    ops = [{"op": "read", "path": str(tmp_path / "other.txt")}]
    result = await run_request(make_config({"fs_ops": ops}, fs="read-write", permission="allow"))
    assert result.output == "[read -> -32002 Resource not found]"


async def test_an_ask_parent_never_grants_a_write(make_config, tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("unchanged", "utf-8")
    ops = [{"op": "write", "path": str(target), "content": "changed"}]
    config = make_config({"fs_ops": ops}, fs="read-write", permission="allow")
    result = await run_request(config, SubagentRequest(prompt="go", allow_writes=False))
    assert result.output == "[write -> -32602 writes are not permitted]"
    assert target.read_text("utf-8") == "unchanged"


async def test_a_write_goes_through_the_permission_policy(make_config, tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("unchanged", "utf-8")
    ops = [{"op": "write", "path": str(target), "content": "changed"}]
    config = make_config({"fs_ops": ops}, fs="read-write", permission="reject")
    result = await run_request(config, SubagentRequest(prompt="go", allow_writes=True))
    assert result == SubagentResult(
        stop_reason="completed",
        output="[write -> -32602 the parent's permission policy refused this request]",
        diagnostic="ACP permission (policy: reject; tool kind: edit; decision: cancelled)",
    )
    assert target.read_text("utf-8") == "unchanged"


async def test_write_escapes_leave_outside_files_unchanged(make_config, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("unchanged", "utf-8")
    (workspace / "link").symlink_to(outside)
    ops = [
        {"op": "write", "path": str(workspace / "link"), "content": "x"},
        {"op": "write", "path": str(workspace / ".." / "outside.txt"), "content": "x"},
        {"op": "write", "path": str(tmp_path / "new.txt"), "content": "x"},
    ]
    config = make_config({"fs_ops": ops}, fs="read-write", permission="allow", cwd=workspace)
    result = await run_request(config, SubagentRequest(prompt="go", allow_writes=True))
    assert result.output == "[write -> -32602 path is outside the workspace]" * 3
    assert outside.read_text("utf-8") == "unchanged"
    assert not (tmp_path / "new.txt").exists()


async def test_read_only_mode_does_not_offer_writes(make_config, tmp_path: Path) -> None:
    ops = [{"op": "write", "path": str(tmp_path / "x.txt"), "content": "x"}]
    config = make_config({"fs_ops": ops}, fs="read", permission="allow")
    result = await run_request(config, SubagentRequest(prompt="go", allow_writes=True))
    assert result.output == "[write -> -32601 Method not found]"
    assert not (tmp_path / "x.txt").exists()


# -- terminals ---------------------------------------------------------------------------------


def python(code: str) -> dict[str, object]:
    return {"command": sys.executable, "args": ["-c", code]}


async def test_a_terminal_runs_in_the_workspace_and_reports_its_exit(
    make_config, tmp_path: Path
) -> None:
    code = "import os, sys; print(os.getcwd()); sys.exit(3)"
    config = make_config(
        {"terminal": {**python(code), "wait": True}}, terminal=True, permission="allow"
    )
    result = await run_request(config)
    assert result.output == f"[terminal -> created][exit -> 3 None][output -> False {tmp_path}\n]"


async def test_terminal_output_keeps_its_newest_bytes(make_config) -> None:
    code = "import sys; sys.stdout.write('a' * 5000 + 'END')"
    spec = {**python(code), "wait": True, "output_byte_limit": 100}
    result = await run_request(make_config({"terminal": spec}, terminal=True, permission="allow"))
    assert result.output == (
        "[terminal -> created][exit -> 0 None][output -> True " + "a" * 97 + "END]"
    )


async def test_terminals_die_with_the_run(make_config, tmp_path: Path) -> None:
    """A terminal left running, with a background and a setsid sleeper, is gone after dispose."""
    marker = tmp_path / "started"
    spec = {"command": "sh", "args": ["-c", f"sleep 100 & setsid sleep 100 & touch {marker}; wait"]}
    config = make_config({"terminal": spec}, terminal=True, permission="allow")
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        async with run:
            assert (await run.result()).output == "[terminal -> created]"
            await poll_until(marker.exists)
            assert await run.dispose() is None
    sleepers = [
        p
        for p in psutil.process_iter(["cmdline", "status"])
        if p.info["cmdline"] == ["sleep", "100"] and p.info["status"] != psutil.STATUS_ZOMBIE
    ]
    assert sleepers == []


async def test_a_killed_terminal_keeps_its_output(make_config) -> None:
    code = "import sys, time; print('up', flush=True); time.sleep(100)"
    spec = {**python(code), "kill": True}
    result = await run_request(make_config({"terminal": spec}, terminal=True, permission="allow"))
    assert result.output.startswith("[terminal -> created][exit -> None SIG")


async def test_terminals_go_through_the_permission_policy(make_config, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    spec = {"command": "touch", "args": [str(marker)], "wait": True}
    result = await run_request(make_config({"terminal": spec}, terminal=True))
    assert result == SubagentResult(
        stop_reason="completed",
        output="[terminal -> -32602 the parent's permission policy refused this request]",
        diagnostic="ACP permission (policy: reject; tool kind: execute; decision: cancelled)",
    )
    assert not marker.exists()


async def test_a_terminal_cwd_outside_the_workspace_is_refused(make_config, tmp_path: Path) -> None:
    spec = {"command": "true", "cwd": str(tmp_path.parent)}
    config = make_config({"terminal": spec}, terminal=True, permission="allow")
    result = await run_request(config)
    assert result.output == "[terminal -> -32602 cwd is outside the workspace]"


async def test_without_the_capability_terminals_are_not_found(make_config) -> None:
    result = await run_request(make_config({"terminal": {"command": "true"}}, permission="allow"))
    assert result.output == "[terminal -> -32601 Method not found]"


# -- permission callback -----------------------------------------------------------------------


async def test_the_callback_is_asked_once_per_request_and_its_choice_is_sent(
    make_config,
) -> None:
    asks: list[PermissionAsk] = []

    async def ask(question: PermissionAsk) -> str | None:
        asks.append(question)
        return "allow_always"

    options = [
        {"optionId": "once", "name": "Once", "kind": "allow_once"},
        {"optionId": "always", "name": "Always", "kind": "allow_always"},
        {"optionId": "no", "name": "No", "kind": "reject_once"},
    ]
    permission = {
        "tool_kind": "edit",
        "title": "Edit main.py",
        "raw_input": {"path": "main.py"},
        "options": options,
    }
    result = await run_request(make_config({"permission": permission}, permission=ask))
    assert asks == [
        PermissionAsk(
            tool_kind="edit",
            option_kinds=("allow_once", "allow_always", "reject_once"),
            title="Edit main.py",
            raw_input={"path": "main.py"},
        )
    ]
    assert result == SubagentResult(stop_reason="completed", output="[permission selected always]")


async def test_a_rejecting_callback_is_recorded(make_config) -> None:
    async def ask(question: PermissionAsk) -> str | None:
        return "reject_once"

    result = await run_request(make_config({"permission": {"tool_kind": "delete"}}, permission=ask))
    assert result == SubagentResult(
        stop_reason="completed",
        output="[permission selected reject]",
        diagnostic="ACP permission (policy: ask; tool kind: delete; decision: reject_once)",
    )


@pytest.mark.parametrize("answer", ["raise", None, "allow_always", 42])
async def test_a_callback_that_fails_or_picks_nothing_offered_answers_cancelled(
    make_config, answer
) -> None:
    async def ask(question: PermissionAsk) -> str | None:
        if answer == "raise":
            raise RuntimeError("the host's dialog broke")
        return answer  # type: ignore[return-value]

    options = [{"optionId": "once", "name": "Once", "kind": "allow_once"}]
    script = {"permission": {"tool_kind": "execute", "options": options}, "text": "!"}
    result = await run_request(make_config(script, permission=ask))
    assert result == SubagentResult(
        stop_reason="completed",
        output="[permission cancelled]!",
        diagnostic="ACP permission (policy: ask; tool kind: execute; decision: cancelled)",
    )


async def test_the_callback_gates_writes_and_terminals(make_config, tmp_path: Path) -> None:
    kinds: list[str] = []

    async def ask(question: PermissionAsk) -> str | None:
        kinds.append(question.tool_kind)
        return "allow_once" if question.tool_kind == "edit" else None

    target = tmp_path / "out.txt"
    script = {
        "fs_ops": [{"op": "write", "path": str(target), "content": "yes"}],
        "terminal": {"command": "true"},
    }
    config = make_config(script, fs="read-write", terminal=True, permission=ask)
    result = await run_request(config, SubagentRequest(prompt="go", allow_writes=True))
    assert kinds == ["edit", "execute"]
    assert result.output == (
        "[write -> ok][terminal -> -32602 the parent's permission policy refused this request]"
    )
    assert target.read_text("utf-8") == "yes"


async def test_requests_beyond_the_in_flight_bound_are_refused(make_config, tmp_path: Path) -> None:
    """20 permission requests at once while the host is slow: 8 reach it, 12 get a fixed error."""
    record = tmp_path / "record.jsonl"
    gate = anyio.Event()
    asked = 0

    def refusals() -> int:
        if not record.exists():
            return 0
        return sum(
            1
            for message in received(record)
            if isinstance(message.get("error"), dict) and message["error"].get("code") == -32603  # type: ignore[union-attr]
        )

    async def ask(question: PermissionAsk) -> str | None:
        nonlocal asked
        asked += 1
        await gate.wait()
        return "allow_once"

    script = {"concurrent_permissions": {"count": 20}, "record_file": str(record)}
    registry = SubagentRegistry()
    registry.register(ACPProvider(make_config(script, permission=ask)))
    with anyio.fail_after(60):
        run = await registry.start("acp", SubagentRequest(prompt="go"))
        async with run:
            await poll_until(lambda: asked == 8 and refusals() == 12)
            gate.set()
            result = await run.result()
    assert asked == 8
    assert result.output == "".join(
        f"[{i} -> {'selected' if i < 8 else -32603}]" for i in range(20)
    )


# -- session options ---------------------------------------------------------------------------

NEW_SESSION = {
    "sessionId": "s-1",
    "modes": {
        "currentModeId": "ask",
        "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}],
    },
    "configOptions": [
        {
            "id": "model-choice",
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": "small",
            "options": [{"value": "small", "name": "S"}, {"value": "large", "name": "L"}],
        }
    ],
}


async def test_mode_and_model_are_applied_before_the_prompt(make_config, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    script = {"results": {"new_session": NEW_SESSION}, "record_file": str(record), "text": "ok"}
    result = await run_request(make_config(script, mode="code", model="large"))
    assert result == SubagentResult(stop_reason="completed", output="ok")
    calls = [(m.get("method"), m.get("params")) for m in received(record) if "method" in m]
    assert calls[2:] == [
        ("session/set_mode", {"sessionId": "s-1", "modeId": "code"}),
        (
            "session/set_config_option",
            {"sessionId": "s-1", "configId": "model-choice", "value": "large"},
        ),
        ("session/prompt", {"sessionId": "s-1", "prompt": [{"type": "text", "text": "go"}]}),
    ]


@pytest.mark.parametrize("fields", [{"mode": "architect"}, {"model": "huge"}, {"mode": "code"}])
async def test_an_option_the_child_does_not_offer_is_a_start_error(
    make_config, tmp_path: Path, fields
) -> None:
    record = tmp_path / "record.jsonl"
    new_session = NEW_SESSION if "code" not in fields.values() else {"sessionId": "s-1"}
    script = {"results": {"new_session": new_session}, "record_file": str(record)}
    registry = SubagentRegistry()
    registry.register(ACPProvider(make_config(script, **fields)))
    with anyio.fail_after(60), pytest.raises(SubagentStartError) as caught:
        await registry.start("acp", SubagentRequest(prompt="go"))
    expected = "Subagent failure (provider: acp; stage: new-session; category: configuration)"
    assert (str(caught.value), caught.value.diagnostic) == (expected, expected)
    methods = [m.get("method") for m in received(record) if "method" in m]
    assert methods == ["initialize", "session/new"]


def test_permission_ask_is_public_and_frozen() -> None:
    ask = PermissionAsk(tool_kind="read", option_kinds=("allow_once",), title=None, raw_input=None)
    with pytest.raises(AttributeError):
        ask.title = "x"  # type: ignore[misc]
