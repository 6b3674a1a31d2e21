"""Named sessions from the command line: `delegate --session`, `sessions`, `close`, `prune`.

Every call is the installed console script in its own process, so each turn after the first is
a cold resume (the fake app-server keeps a non-ephemeral thread's prompts under its
`CODEX_HOME`, which the session gives it per handle).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import anyio
import pytest
from subagent_codex.testing import SCENARIO_ENV

SCRIPT = Path(sys.executable).with_name("harness")
GRACES = (
    "dispose_eof_grace_seconds = 0.5\ndispose_grace_seconds = 0.5\n"
    "dispose_kill_grace_seconds = 1.0\n"
)


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A workspace whose harness.toml runs the fake codex (it answers with every prompt it has
    seen in the thread), and the environment pointing the harness at a scratch state dir."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    scenario = json.dumps({"echo_history": True})
    (workspace / "harness.toml").write_text(
        f'[providers.codex]\nkind = "codex"\ncommand = {json.dumps(sys.executable)}\n'
        f'args = ["-m", "subagent_codex.testing"]\nsandbox = "read-only"\n'
        f"env = {{ {SCENARIO_ENV} = {json.dumps(scenario)} }}\n{GRACES}",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEEPSEEK_")}
    env["HARNESS_STATE_DIR"] = str(tmp_path / "state")
    return workspace, env


async def _harness(args: list[str], env: Mapping[str, str]) -> tuple[int, str, str]:
    with anyio.fail_after(90):
        done = await anyio.run_process([str(SCRIPT), *args], check=False, env=dict(env))
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_a_named_session_continues_across_calls(place: tuple[Path, dict[str, str]]) -> None:
    workspace, env = place
    base = ["delegate", "-w", str(workspace), "-p", "codex", "--session", "fix"]
    code, out, err = await _harness([*base, "first task"], env)
    assert (code, out) == (0, "seen: first task\n"), err
    assert "session fix: turn 1" in err
    code, out, err = await _harness([*base, "--json", "now the test"], env)
    assert code == 0, err
    result = json.loads(out.splitlines()[-1])
    assert result["output"] == "seen: first task | now the test"
    assert result["session"] == {"name": "fix", "turn": 2}
    code, out, err = await _harness(["sessions", "--json"], env)
    assert code == 0, err
    [listed] = [json.loads(line) for line in out.splitlines()]
    assert (listed["name"], listed["agent"], listed["turns"]) == ("fix", "codex", 2)
    assert listed["workspace"] == str(workspace)
    assert "01a23700" not in out  # the child's own thread id never leaves the record
    code, out, err = await _harness(["sessions", "close", "fix"], env)
    assert (code, out) == (0, "closed session fix\n"), err
    code, out, _ = await _harness(["sessions", "--json"], env)
    assert (code, out) == (0, "")


async def test_a_session_of_another_agent_or_a_bad_name_is_a_usage_error(
    place: tuple[Path, dict[str, str]],
) -> None:
    workspace, env = place
    code, _, err = await _harness(
        ["delegate", "-w", str(workspace), "-p", "codex", "--session", "../x", "hi"], env
    )
    assert code == 2
    assert "--session takes" in err
    code, _, err = await _harness(["sessions", "close", "nothing"], env)
    assert (code, err.strip()) == (2, "harness: no session named nothing")


async def test_prune_deletes_only_stale_sessions(place: tuple[Path, dict[str, str]]) -> None:
    workspace, env = place
    for name in ("old", "new"):
        code, _, err = await _harness(
            ["delegate", "-w", str(workspace), "-p", "codex", "--session", name, "hi"], env
        )
        assert code == 0, err
    sessions = Path(env["HARNESS_STATE_DIR"]) / "sessions"
    for folder in sessions.iterdir():
        record_path = folder / "record.json"
        record = json.loads(record_path.read_text(encoding="utf-8"))
        if record["label"] == "old":
            record["last_used"] -= 8 * 86400
            record_path.write_text(json.dumps(record), encoding="utf-8")
    code, out, err = await _harness(["sessions", "prune", "--older-than", "7d"], env)
    assert (code, out) == (0, "pruned 1 session(s): old\n"), err
    code, out, _ = await _harness(["sessions", "--json"], env)
    assert [json.loads(line)["name"] for line in out.splitlines()] == ["new"]


async def test_a_kept_fanout_child_continues_as_a_session(
    place: tuple[Path, dict[str, str]],
) -> None:
    """`fanout --keep`: each child whose provider can resume is kept as a session named
    `fanout-<run>-<agent>`, continued in its worktree by `delegate --session`."""
    workspace, env = place
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        git = await anyio.run_process(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=workspace,
            check=False,
            env=dict(env),
        )
        assert git.returncode == 0, git.stderr
    code, out, err = await _harness(
        ["fanout", "-w", str(workspace), "-a", "codex", "--keep", "--json", "the task"], env
    )
    assert code == 0, err
    [child] = [r for r in map(json.loads, out.splitlines()) if r["type"] == "child"]
    name = child["session"]
    assert name.startswith("fanout-")
    assert name.endswith("-codex")
    code, out, err = await _harness(["sessions", "--json"], env)
    [listed] = [json.loads(line) for line in out.splitlines()]
    assert (listed["name"], listed["workspace"]) == (name, child["isolation_path"])
    code, out, err = await _harness(["delegate", "-p", "codex", "--session", name, "next"], env)
    assert (code, out) == (0, "seen: the task | next\n"), err
