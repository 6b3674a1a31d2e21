"""CLI parsing with typer's CliRunner: help text, usage errors, config errors, missing key."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.cli import app
from typer.testing import CliRunner

COMMANDS = [
    "demo",
    "run",
    "delegate",
    "acp-agent",
    "sdk-runtime",
    "fake-acp-child",
    "fake-sdk-runtime",
    "fake-model",
    "e2e",
    "providers",
]

runner = CliRunner()


def test_help_lists_every_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in COMMANDS:
        assert command in result.output
    assert "Exit codes: 0 success, 1 a run that did not complete" in " ".join(result.output.split())


def test_no_arguments_shows_help() -> None:
    result = runner.invoke(app, [])
    assert result.exit_code == 2
    assert "Usage: harness" in result.output


@pytest.mark.parametrize("command", [c for c in COMMANDS if not c.startswith("fake-")])
def test_each_command_has_help(command: str) -> None:
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert f"Usage: harness {command}" in result.output


def test_a_bad_mode_is_a_usage_error() -> None:
    result = runner.invoke(app, ["run", "--mode", "yolo", "hi"])
    assert result.exit_code == 2
    assert "yolo" in result.output


def test_delegate_needs_a_provider() -> None:
    result = runner.invoke(app, ["delegate", "hi"])
    assert result.exit_code == 2
    assert "--provider" in result.output


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("DEEPSEEK_BASE_URL", raising=False)
    result = runner.invoke(app, ["run", "--workspace", str(tmp_path), "hi"])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "harness: DEEPSEEK_API_KEY is not set." in result.stderr


def test_bad_config_names_the_key(tmp_path: Path) -> None:
    config = tmp_path / "harness.toml"
    config.write_text('[providers.x]\nkind = "acp"\ncommand = 3\n', encoding="utf-8")
    result = runner.invoke(app, ["providers", "--config", str(config)])
    assert result.exit_code == 2
    assert result.stderr == f"harness: {config}: providers.x.command: must be a non-empty string\n"


def test_the_workspace_config_is_found(tmp_path: Path) -> None:
    (tmp_path / "harness.toml").write_text("[model]\nmax_tokens = -1\n", encoding="utf-8")
    result = runner.invoke(app, ["providers", "--workspace", str(tmp_path), "--no-check"])
    assert result.exit_code == 2
    assert "model.max_tokens: must be a positive integer" in result.stderr


def test_delegate_to_an_unknown_provider_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "delegate",
            "hi",
            "--provider",
            "nope",
            "--workspace",
            str(tmp_path),
            "--base-url",
            "http://127.0.0.1:9",
        ],
    )
    assert result.exit_code == 2
    assert result.stderr == (
        'harness: no provider or agent named "nope" (configured: acp, dsh-sdk, model; agents: '
        "claude, codex, claude-acp, codex-acp, gemini, qwen, opencode, harness)\n"
    )


def test_providers_without_check_lists_the_builtins(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["providers", "--workspace", str(tmp_path), "--no-check"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0
    for name in ("acp", "dsh-sdk", "model"):
        assert name in result.stdout
    assert "built-in defaults" in result.stdout


def test_e2e_keyed_without_a_key_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    result = runner.invoke(app, ["e2e", "--keyed", "--no-live"])
    assert result.exit_code == 2
    assert result.stderr.startswith("harness: DEEPSEEK_API_KEY is not set.")


def test_sdk_runtime_without_a_key_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("DEEPSEEK_BASE_URL", raising=False)
    result = runner.invoke(app, ["sdk-runtime"])
    assert result.exit_code == 2
    assert result.stderr.startswith("harness: DEEPSEEK_API_KEY is not set.")


def test_builtin_providers_without_a_key_say_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("DEEPSEEK_BASE_URL", raising=False)
    result = runner.invoke(app, ["providers", "--workspace", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert result.stdout.count("needs DEEPSEEK_API_KEY") == 3
