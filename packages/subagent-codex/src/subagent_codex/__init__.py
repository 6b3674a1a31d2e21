"""subagent-codex: subagents as fresh Codex app-server child processes.

`CodexProvider(CodexConfig())` registers on a `subagent_core.SubagentRegistry`; each run spawns
a new `codex app-server`, speaks its JSONL JSON-RPC protocol (an ephemeral thread, one turn),
and settles with a result whose diagnostic is safe fixed-vocabulary text.
"""

from ._config import CodexConfig as CodexConfig
from ._config import Sandbox as Sandbox
from ._provider import CodexProvider as CodexProvider

__all__ = ["CodexConfig", "CodexProvider", "Sandbox"]
