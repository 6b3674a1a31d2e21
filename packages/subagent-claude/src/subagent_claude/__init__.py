"""subagent-claude: subagents as fresh Claude Code CLI child processes.

`ClaudeProvider(ClaudeConfig())` registers on a `subagent_core.SubagentRegistry`; each run
spawns the `claude` CLI, drives it over its stream-json control protocol (the way the official
Agent SDKs do, hand-rolled here on subagent-core's framing), answers its permission requests
through the configured policy, and settles with a result whose diagnostic is safe
fixed-vocabulary text, plus token usage and cost.

Names are loaded on first use so that `python -m subagent_claude.testing` (the fake CLI)
starts without importing the provider.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._config import ClaudeConfig as ClaudeConfig
    from ._provider import ClaudeProvider as ClaudeProvider

__all__ = ["ClaudeConfig", "ClaudeProvider"]

_HOMES = {"ClaudeConfig": "._config", "ClaudeProvider": "._provider"}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value
