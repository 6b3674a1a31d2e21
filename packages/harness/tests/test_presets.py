"""Agents by name: the preset table, `preset = "…"` in harness.toml, and credentials."""

from __future__ import annotations

import re

import pytest
from harness import ConfigError
from harness._config.loading import parse_config
from harness._config.presets import PRESETS, find_preset
from harness._config.provider_tables import preset_settings
from harness._config.settings import MissingCredentialError
from harness._registry.build import find_provider

SPEC_NAMES = ("claude", "codex", "claude-acp", "codex-acp", "gemini", "qwen", "opencode", "harness")
_CREDENTIAL_SHAPED = re.compile(r"KEY|PASSWORD|SECRET|TOKEN", re.IGNORECASE)


def test_the_table_holds_the_specs_presets_in_order() -> None:
    assert tuple(preset.name for preset in PRESETS) == SPEC_NAMES
    for preset in PRESETS:
        assert preset.install
        # Fixed env never carries a credential: those come only from ${VAR} references.
        assert not any(_CREDENTIAL_SHAPED.search(name) for name in preset.env)


def test_each_preset_runs_what_the_spec_says() -> None:
    runs = {preset.name: " ".join(preset.argv[-2:]) for preset in PRESETS}
    assert runs["gemini"] == "gemini --acp"
    assert runs["qwen"] == "qwen --acp"
    assert runs["opencode"] == "opencode acp"
    assert runs["codex"] == "codex app-server"
    assert runs["harness"] == "harness acp-agent"
    assert find_preset("claude-acp") is not None
    assert find_preset("claude-acp").argv == ("claude-agent-acp",)  # type: ignore[union-attr]


def test_a_preset_is_found_by_name_without_config() -> None:
    settings = find_provider(parse_config({}), None, "gemini")
    assert settings is not None
    assert (settings.kind, settings.command, settings.args) == ("acp", "gemini", ("--acp",))
    assert settings.preset == "gemini"
    assert find_provider(parse_config({}), None, "nope") is None


def test_a_config_table_of_the_same_name_wins_over_the_preset() -> None:
    config = parse_config({"providers": {"gemini": {"kind": "acp", "command": "my-gemini"}}})
    settings = find_provider(config, None, "gemini")
    assert settings is not None
    assert (settings.command, settings.preset) == ("my-gemini", None)


def test_a_table_may_start_from_a_preset_and_override_keys() -> None:
    config = parse_config(
        {
            "providers": {
                "review": {
                    "preset": "claude-acp",
                    "permission": "allow",
                    "model": "opus",
                    "env": {"CLAUDE_CODE_MAX_RETRIES": "5"},
                }
            }
        }
    )
    settings = config.provider("review")
    assert settings is not None
    assert (settings.kind, settings.command, settings.preset) == (
        "acp",
        "claude-agent-acp",
        "claude-acp",
    )
    assert (settings.permission, settings.config.model) == ("allow", "opus")
    assert settings.env["CLAUDE_CODE_MAX_RETRIES"] == "5"
    assert settings.env["DISABLE_AUTOUPDATER"] == "1"
    assert settings.unset_env == ("IS_SANDBOX",)


def test_an_unknown_preset_or_a_kind_that_contradicts_it_names_the_key() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": {"x": {"preset": "nope"}}})
    assert caught.value.key == "providers.x.preset"
    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": {"x": {"preset": "gemini", "kind": "sdk"}}})
    assert str(caught.value) == 'harness.toml: providers.x.kind: preset "gemini" is of kind "acp"'


def test_a_native_preset_leaves_finding_its_cli_to_its_provider() -> None:
    claude = preset_settings(find_preset("claude"))  # type: ignore[arg-type]
    assert (claude.kind, claude.command) == ("claude", None)
    config = parse_config({"providers": {"review": {"preset": "codex", "model": "gpt-5"}}})
    codex = config.provider("review")
    assert codex is not None
    assert (codex.kind, codex.command, codex.config.model) == ("codex", None, "gpt-5")


def test_only_the_presets_own_credentials_are_handed_over_and_only_when_set() -> None:
    settings = preset_settings(find_preset("claude-acp"))  # type: ignore[arg-type]
    environ = {"ANTHROPIC_API_KEY": "a-secret", "OPENAI_API_KEY": "o-secret", "IS_SANDBOX": "1"}
    variables = settings.explicit_env(environ)
    assert variables["ANTHROPIC_API_KEY"] == "a-secret"
    assert variables["IS_SANDBOX"] is None  # removed from what the child inherits
    assert "OPENAI_API_KEY" not in variables
    assert "ANTHROPIC_AUTH_TOKEN" not in variables
    assert variables["CLAUDE_CODE_MAX_RETRIES"] == "2"


def test_a_needed_credential_missing_names_the_variable_and_no_value() -> None:
    settings = preset_settings(find_preset("gemini"))  # type: ignore[arg-type]
    with pytest.raises(MissingCredentialError) as caught:
        settings.resolved_env({"OPENAI_API_KEY": "o-secret"})
    assert str(caught.value) == (
        '"gemini" needs GEMINI_API_KEY set in the environment (export GEMINI_API_KEY=...); '
        "it is handed to the child and never stored or printed"
    )
    assert settings.resolved_env({"GEMINI_API_KEY": "g"}) == {
        "GEMINI_API_KEY": "g",
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }
