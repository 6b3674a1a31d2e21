"""Test support: the fake `claude` CLI and the loopback Anthropic Messages stub.

- `python -m subagent_claude.testing` is the fake CLI (stdlib only): a real child process
  speaking the stream-json control protocol with frames copied from the real CLI; its scenario
  is the JSON object in `CLAUDE_FAKE_SCRIPT` (`script_env`), knobs listed in `KNOBS`.
- `MessagesStub` serves the Messages API on 127.0.0.1 so the real CLI runs keyless;
  `stub_env` is the child environment that points a `ClaudeConfig` at it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from ._fake import FRAMES_DIR as FRAMES_DIR
from ._fake import captured as captured
from ._fake import run_fake_claude
from ._messages_stub import Block as Block
from ._messages_stub import MessagesStub as MessagesStub
from ._messages_stub import Recorded as Recorded
from ._messages_stub import Turn as Turn
from ._messages_stub import error_turn as error_turn
from ._messages_stub import stall_turn as stall_turn
from ._messages_stub import text_turn as text_turn
from ._messages_stub import tool_turn as tool_turn
from ._script import KNOBS as KNOBS
from ._script import SCRIPT_ENV as SCRIPT_ENV

__all__ = [
    "FRAMES_DIR",
    "KNOBS",
    "QUIET_ENV",
    "SCRIPT_ENV",
    "Block",
    "MessagesStub",
    "Recorded",
    "Turn",
    "captured",
    "error_turn",
    "fake_claude_argv",
    "main",
    "script_env",
    "stall_turn",
    "stub_env",
    "text_turn",
    "tool_turn",
]

QUIET_ENV: Mapping[str, str] = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
"""Keeps the real CLI from reaching anything but the stub."""


def main(argv: list[str] | None = None) -> int:
    """Runs the fake CLI on stdio; returns its exit code."""
    return run_fake_claude(argv)


def fake_claude_argv() -> list[str]:
    """argv that starts the fake CLI with this interpreter (`command`, then `args`)."""
    return [sys.executable, "-m", "subagent_claude.testing"]


def script_env(script: Mapping[str, object]) -> dict[str, str]:
    """The environment entry that hands `script` to the fake CLI (for `ClaudeConfig.env`)."""
    return {SCRIPT_ENV: json.dumps(dict(script))}


def stub_env(
    stub: MessagesStub, home: Path, *, key: str | None = "sk-stub-dummy"
) -> dict[str, str]:
    """A real CLI's environment against `stub`: throwaway `HOME` and config dir, a dummy key
    (or none), and no traffic to anything else."""
    config_dir = home / ".claude"
    config_dir.mkdir(parents=True, exist_ok=True)
    env = {
        **QUIET_ENV,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "ANTHROPIC_BASE_URL": stub.url,
    }
    if key is not None:
        env["ANTHROPIC_API_KEY"] = key
    return env
