"""subagent-acp: subagents as fresh Agent Client Protocol child processes.

`ACPProvider(ACPConfig(command=...))` registers on a `subagent_core.SubagentRegistry`; each run
spawns a new child process, drives it as an ACP client, and settles with a result whose
diagnostic is safe fixed-vocabulary text.

Names are loaded on first use so that `python -m subagent_acp.testing` (the scripted fake
child) starts without importing the provider or the `acp` SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._config import ACPConfig as ACPConfig
    from ._provider import ACPProvider as ACPProvider

__all__ = ["ACPConfig", "ACPProvider"]

_HOMES = {"ACPConfig": "._config", "ACPProvider": "._provider"}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value
