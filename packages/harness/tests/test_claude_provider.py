"""`kind = "claude"` providers: parsed from harness.toml, listed, checked and delegated to."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from harness._config.loading import parse_config
from harness._config.toml_values import ConfigError
from harness._registry.build import build_provider
from harness.cli import app
from subagent_claude import ClaudeProvider
from typer.testing import CliRunner

runner = CliRunner()


def _fake_table(script: dict[str, object]) -> str:
    args = json.dumps(["-m", "subagent_claude.testing"])
    env = json.dumps(json.dumps(script))
    return (
        "[providers.claude]\n"
        'kind = "claude"\n'
        f"command = {json.dumps(sys.executable)}\n"
        f"args = {args}\n"
        f"env = {{ CLAUDE_FAKE_SCRIPT = {env} }}\n"
        "dispose_eof_grace_seconds = 0.5\n"
    )


def test_a_claude_table_needs_no_command(tmp_path: Path) -> None:
    config = parse_config(
        {"providers": {"review": {"kind": "claude", "model": "sonnet", "permission": "allow"}}}
    )
    (settings,) = config.providers
    assert (settings.kind, settings.command, settings.config.model) == ("claude", None, "sonnet")
    provider = build_provider(settings, endpoint=None, workspace=tmp_path)
    assert isinstance(provider, ClaudeProvider)
    assert provider.config.command is None
    assert provider.config.model == "sonnet"
    assert provider.config.permission == "allow"


def test_a_claude_table_refuses_acp_keys() -> None:
    with pytest.raises(ConfigError, match=r"providers\.review"):
        parse_config({"providers": {"review": {"kind": "claude", "fs": "read"}}})


def test_providers_lists_and_checks_a_claude_child(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text(_fake_table({}), encoding="utf-8")
    result = runner.invoke(
        app,
        ["providers", "--workspace", str(tmp_path), "--json"],
        env={"COLUMNS": "200"},
    )
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    (row,) = [r for r in rows if r.get("name") == "claude"]
    assert (row["kind"], row["permission"], row["status"]) == ("claude", "reject", "ok")


def test_delegate_to_a_claude_child(tmp_path: Path) -> None:
    table = _fake_table({"text": "Hello from the fake Claude CLI."})
    (tmp_path / "harness.toml").write_text(table, encoding="utf-8")
    result = runner.invoke(
        app, ["delegate", "say hello", "-p", "claude", "--workspace", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "Hello from the fake Claude CLI." in result.stdout


def test_command_line_overrides_reach_a_claude_child(tmp_path: Path) -> None:
    from harness._registry.overrides import ProviderOverrides
    from subagent_core import READS_POLICY

    (settings,) = parse_config({"providers": {"review": {"kind": "claude"}}}).providers
    overrides = ProviderOverrides(approve="reads", idle_timeout_seconds=30.0)
    provider = build_provider(settings, endpoint=None, workspace=tmp_path, overrides=overrides)
    assert isinstance(provider, ClaudeProvider)
    assert dict(provider.config.permission) == dict(READS_POLICY)  # type: ignore[arg-type]
    assert provider.config.idle_timeout_seconds == 30.0
