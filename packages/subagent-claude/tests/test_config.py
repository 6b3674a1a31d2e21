from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from subagent_claude import ClaudeConfig
from subagent_claude._argv import protocol_options


@pytest.mark.parametrize(
    ("fields", "key"),
    [
        ({"provider_name": "bad name"}, "provider_name"),
        ({"permission": "maybe"}, "permission"),
        ({"permission": {"reads": "allow"}}, "permission"),
        ({"permission": {"*": "sometimes"}}, "permission"),
        ({"model": ""}, "model"),
        ({"max_turns": 0}, "max_turns"),
        ({"max_turns": True}, "max_turns"),
        ({"system_prompt": "custom"}, "system_prompt"),
        ({"read_user_settings": "yes"}, "read_user_settings"),
        ({"startup_timeout_seconds": 0}, "startup_timeout_seconds"),
        ({"idle_timeout_seconds": float("inf")}, "idle_timeout_seconds"),
        ({"dispose_grace_seconds": -1}, "dispose_grace_seconds"),
        ({"max_frame_bytes": 0}, "max_frame_bytes"),
        ({"args": ["--permission-mode", "bypassPermissions"]}, "args"),
        ({"args": ["--dangerously-skip-permissions"]}, "args"),
        ({"args": ["--setting-sources=user"]}, "args"),
        ({"cwd": Path("/nonexistent/dir")}, "cwd"),
        ({"env": {"A=B": "x"}}, "env"),
    ],
)
def test_bad_values_name_the_key(fields: dict[str, Any], key: str) -> None:
    with pytest.raises(ValueError, match=rf"^ClaudeConfig\.{key}"):
        ClaudeConfig(**fields)


def test_defaults_and_options() -> None:
    config = ClaudeConfig()
    assert (config.command, config.provider_name, config.permission) == (None, "claude", "reject")
    assert (config.startup_timeout_seconds, config.idle_timeout_seconds) == (60.0, 1800.0)
    options = protocol_options(config, None)
    assert options[:7] == [
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
        "--permission-prompt-tool",
        "stdio",
    ]
    assert "--include-partial-messages" in options
    assert "--setting-sources=" in options
    assert options[options.index("--disallowedTools") + 1] == "AskUserQuestion"
    assert options[options.index("--system-prompt") + 1] == ""
    assert "--permission-mode" not in options


def test_options_follow_the_config() -> None:
    config = ClaudeConfig(
        model="sonnet",
        max_turns=3,
        system_prompt="claude_code",
        read_user_settings=True,
        startup_timeout_seconds=None,
    )
    options = protocol_options(config, {"type": "object"})
    assert options[options.index("--model") + 1] == "sonnet"
    assert options[options.index("--max-turns") + 1] == "3"
    assert options[options.index("--json-schema") + 1] == '{"type":"object"}'
    assert "--system-prompt" not in options
    assert "--setting-sources=" not in options
    assert config.startup_timeout_seconds is None


def test_env_is_kept_out_of_repr() -> None:
    config = ClaudeConfig(env={"ANTHROPIC_API_KEY": "sk-SECRET"})
    assert "sk-SECRET" not in repr(config)
