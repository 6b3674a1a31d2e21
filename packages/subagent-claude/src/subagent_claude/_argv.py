"""Which CLI a run starts and the options it is given.

The options put the CLI in the Agent SDKs' mode: stream-json both ways, permission prompts sent
to us as `can_use_tool` control requests, and the default permission mode (never
`bypassPermissions`/`acceptEdits`, which would decide without asking). `AskUserQuestion` is
disallowed: there is no user to answer it. Without `read_user_settings` no settings file is read
(`--setting-sources=` empty), so host allow rules and hooks cannot pre-empt the policy.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._config import ClaudeConfig

_BUNDLED_MODULE = "claude_agent_sdk"


def bundled_cli() -> Path | None:
    """The CLI inside an installed `claude-agent-sdk` wheel, found without importing it."""
    try:
        spec = importlib.util.find_spec(_BUNDLED_MODULE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "_bundled" / ("claude.exe" if os.name == "nt" else "claude")
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def resolve_command(config: ClaudeConfig) -> str | None:
    """The executable for a run, or `None` when no CLI can be found (`process-start`)."""
    if config.command is not None:
        return config.command
    if config.remote is not None:
        return "claude"  # resolved on the remote host's PATH
    found = shutil.which("claude")
    if found is not None:
        return found
    bundled = bundled_cli()
    return None if bundled is None else str(bundled)


def protocol_options(
    config: ClaudeConfig, output_schema: Mapping[str, Any] | None, *, resume: str | None = None
) -> list[str]:
    """The provider's own options, after `config.args`; `resume` continues that session."""
    options = [
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
        "--permission-prompt-tool",
        "stdio",
        "--include-partial-messages",
        "--disallowedTools",
        "AskUserQuestion",
    ]
    if config.system_prompt == "none":
        options += ["--system-prompt", ""]
    if not config.read_user_settings:
        options.append("--setting-sources=")
    if config.model is not None:
        options += ["--model", config.model]
    if config.max_turns is not None:
        options += ["--max-turns", str(config.max_turns)]
    if output_schema is not None:
        options += ["--json-schema", json.dumps(dict(output_schema), separators=(",", ":"))]
    if resume is not None:
        options += ["--resume", resume]
    return options
