"""`harness agents` and `harness delegate -a NAME` as a user runs them (real `python -m harness`)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import anyio
import pytest
from harness._config.presets import PRESETS
from subagent_acp.testing import SCRIPT_ENV
from subagent_core.kit import open_managed_process

HARNESS = [sys.executable, "-m", "harness"]
_CREDENTIAL_SHAPED = re.compile(r"KEY|PASSWORD|SECRET|TOKEN", re.IGNORECASE)


async def _run(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Runs the harness with exactly `env` (no inherited variables at all)."""
    with anyio.fail_after(50):
        async with open_managed_process(
            [*HARNESS, *args], env=env, stdin="devnull", stderr="pipe"
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


def _base_env(tmp_path: Path, bin_dir: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PYTHONWARNDEFAULTENCODING": "1",
    }


def _fake(bin_dir: Path, name: str, body: str) -> Path:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return path


def _records(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.anyio
async def test_with_no_agent_installed_every_preset_is_not_found_with_its_hint(
    tmp_path: Path,
) -> None:
    """The `harness` preset is this interpreter, so it alone is found."""
    code, out, err = await _run(["agents", "--json"], _base_env(tmp_path, tmp_path / "empty"))
    assert (code, err) == (0, "")
    records = _records(out)
    agents = {record["name"]: record for record in records if record["type"] == "agent"}
    assert list(agents) == [preset.name for preset in PRESETS]
    for preset in PRESETS:
        record = agents[preset.name]
        if preset.name == "harness":
            assert record["found"] is True
            continue
        assert record["found"] is False
        assert record["version"] is None
        assert record["install"] in (
            preset.install,
            f"pip install 'subagent-{preset.name}[cli]'",
        )
    assert agents["gemini"]["install"] == "npm install -g @google/gemini-cli@0.61.0"
    assert agents["gemini"]["credentials_missing"] == ["GEMINI_API_KEY"]
    assert records[-1] == {
        "type": "summary",
        "config": None,
        "found": 1,
        "total": len(PRESETS),
        "exit_code": 0,
    }


@pytest.mark.anyio
async def test_a_fake_gemini_on_path_is_found_with_its_version_and_no_key_value(
    tmp_path: Path,
) -> None:
    bin_dir = tmp_path / "bin"
    # The version answer carries noise: only the version-shaped token is shown.
    _fake(bin_dir, "gemini", 'echo "gemini \\033[31m0.61.0 sk-noise"\n')
    env = _base_env(tmp_path, bin_dir) | {"GEMINI_API_KEY": "g-secret-value"}
    code, out, _ = await _run(["agents", "--json"], env)
    assert code == 0
    gemini = next(record for record in _records(out) if record.get("name") == "gemini")
    assert (gemini["found"], gemini["version"]) == (True, "0.61.0")
    assert (gemini["credentials_set"], gemini["needs_credential"]) == (["GEMINI_API_KEY"], False)
    assert "g-secret-value" not in out
    code, out, _ = await _run(["agents"], env)
    assert code == 0
    row = next(line for line in out.splitlines() if "gemini --acp" in line)
    cells = [cell.strip() for cell in row.split("│")]
    assert "found" in cells
    assert "0.61.0" in cells
    assert "set: GEMINI_API_KEY" in cells
    assert "g-secret-value" not in out


@pytest.mark.anyio
@pytest.mark.parametrize(
    "args",
    [
        ["delegate", "-a", "gemini", "say hi"],
        # fanout resolves presets as delegate does, and refuses before starting any child.
        ["fanout", "say hi", "-a", "claude-acp", "-a", "gemini", "--isolation", "none", "--yes"],
    ],
    ids=["delegate", "fanout"],
)
async def test_an_agent_without_its_key_spawns_nothing_and_exits_2(
    tmp_path: Path, args: list[str]
) -> None:
    bin_dir = tmp_path / "bin"
    marker = tmp_path / "spawned"
    _fake(bin_dir, "gemini", f"touch {marker}\n")
    _fake(bin_dir, "claude-agent-acp", f"touch {marker}\n")
    env = _base_env(tmp_path, bin_dir) | {"OPENAI_API_KEY": "o-secret"}
    code, out, err = await _run(args, env)
    assert (code, out) == (2, "")
    assert err == (
        'harness: "gemini" needs GEMINI_API_KEY set in the environment (export '
        "GEMINI_API_KEY=...); it is handed to the child and never stored or printed\n"
    )
    assert not marker.exists()


@pytest.mark.anyio
async def test_an_unknown_agent_names_the_agents(tmp_path: Path) -> None:
    code, _, err = await _run(["delegate", "--agent", "nope", "hi"], _base_env(tmp_path, tmp_path))
    assert code == 2
    assert err.startswith('harness: no provider or agent named "nope" (configured: acp, ')
    assert "agents: claude, codex, claude-acp, codex-acp, gemini, qwen, opencode, harness)" in err


@pytest.mark.anyio
async def test_a_preset_child_gets_only_the_credentials_it_names(tmp_path: Path) -> None:
    """claude-agent-acp (here a fake that records its env, then serves the fake ACP child)
    receives its own key, never the other credential-shaped names, and no `IS_SANDBOX`; its
    session is switched to the `default` mode, where every edit is asked."""
    bin_dir = tmp_path / "bin"
    dump = tmp_path / "env.txt"
    _fake(
        bin_dir,
        "claude-agent-acp",
        f"env > {dump}\nexec {sys.executable} -m harness fake-acp-child\n",
    )
    env = _base_env(tmp_path, bin_dir) | {
        "ANTHROPIC_API_KEY": "a-secret",
        "OPENAI_API_KEY": "o-secret",
        "GEMINI_API_KEY": "g-secret",
        "MY_SERVICE_TOKEN": "t-secret",
        "DB_PASSWORD": "p-secret",
        "IS_SANDBOX": "1",
        SCRIPT_ENV: json.dumps(
            {
                "text": "fake answer",
                "record_file": str(tmp_path / "frames.jsonl"),
                # As claude-agent-acp: sessions start in `auto` unless a mode is selected.
                "results": {
                    "new_session": {
                        "sessionId": "s1",
                        "modes": {
                            "currentModeId": "auto",
                            "availableModes": [
                                {"id": "default", "name": "Default"},
                                {"id": "auto", "name": "Auto"},
                            ],
                        },
                    }
                },
            }
        ),
    }
    code, out, err = await _run(["delegate", "-a", "claude-acp", "--json", "say hi"], env)
    assert code == 0, err
    result = _records(out)[-1]
    assert (result["stop_reason"], result["output"]) == ("completed", "fake answer")
    child = dict(
        line.split("=", 1) for line in dump.read_text(encoding="utf-8").splitlines() if "=" in line
    )
    shaped = {name for name in child if _CREDENTIAL_SHAPED.search(name)}
    assert shaped == {"ANTHROPIC_API_KEY"}
    assert child["ANTHROPIC_API_KEY"] == "a-secret"
    assert "IS_SANDBOX" not in child
    assert child["CLAUDE_CODE_MAX_RETRIES"] == "2"
    frames = [
        json.loads(line)
        for line in (tmp_path / "frames.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    modes = [f["params"] for f in frames if f.get("method") == "session/set_mode"]
    assert modes == [{"sessionId": "s1", "modeId": "default"}]


@pytest.mark.anyio
async def test_check_names_the_missing_credential_and_starts_the_found_agents(
    tmp_path: Path,
) -> None:
    """gemini is found but lacks its key (not started); `harness` is started and, with no
    DeepSeek key, answers `auth_required`: its safe diagnostic is shown and the exit is 1."""
    bin_dir = tmp_path / "bin"
    marker = tmp_path / "spawned"
    _fake(bin_dir, "gemini", f'case "$1" in --version) echo 0.61.0;; *) touch {marker};; esac\n')
    code, out, _ = await _run(["agents", "--check", "--json"], _base_env(tmp_path, bin_dir))
    agents = {r["name"]: r for r in _records(out) if r["type"] == "agent"}
    assert agents["gemini"]["check"] == "needs GEMINI_API_KEY"
    assert not marker.exists()
    assert agents["harness"]["check"] == (
        "failed: Subagent failure (provider: harness; stage: new-session; category: authentication)"
    )
    assert agents["qwen"]["check"] is None  # not found: not started
    assert code == 1


@pytest.mark.anyio
async def test_fanout_runs_a_preset_named_with_no_config_table(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _fake(bin_dir, "claude-agent-acp", f"exec {sys.executable} -m harness fake-acp-child\n")
    # As claude-agent-acp: the session offers the `default` mode the preset selects.
    modes = {"currentModeId": "auto", "availableModes": [{"id": "default", "name": "Default"}]}
    script = {"text": "fanned out", "results": {"new_session": {"sessionId": "s1", "modes": modes}}}
    env = _base_env(tmp_path, bin_dir) | {SCRIPT_ENV: json.dumps(script)}
    args = ["fanout", "say hi", "-a", "claude-acp", "--isolation", "none", "--yes", "--json"]
    code, out, err = await _run(args, env)
    assert code == 0, err
    child = next(record for record in _records(out) if record.get("agent") == "claude-acp")
    assert (child["stop_reason"], child["output"]) == ("completed", "fanned out")


@pytest.mark.anyio
async def test_fanout_names_the_agents_for_an_unknown_one(tmp_path: Path) -> None:
    args = ["fanout", "hi", "-a", "nope", "--isolation", "none", "--yes"]
    code, _, err = await _run(args, _base_env(tmp_path, tmp_path))
    assert code == 2
    assert err.startswith('harness: no provider or agent named "nope" (configured: acp, ')
    assert "agents: claude, codex, claude-acp, codex-acp, gemini, qwen, opencode, harness)" in err
