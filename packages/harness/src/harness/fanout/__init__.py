"""Fan-out: the same task on several agents at once, each in its own place, compared after.

The public library call is `run_fanout(registry, agents, request)`; `harness fanout` is the
command around it.

```
harness fanout PROMPT -a A -a B ──▶ _command: agents resolved as `delegate -a` resolves one,
                                      one registry (_registry), Ctrl-C / SIGTERM ─▶ cancel
                                          │
run_fanout (_run) ◀───────────────────────┘
  _isolation.open_isolation: a git worktree (or a copy, or the workspace itself) per child
    one task per child, at most `concurrency` at once:
      its place ─▶ start it there ─▶ watch it (deadline) ─▶ dispose ─▶ its changes as a patch
  ─▶ one FanoutResult per agent, in the order asked
                                          │
_view: a live row per child while they work, then the summary table (or NDJSON records)
```
"""

from ._isolation import ISOLATION_MODES as ISOLATION_MODES
from ._isolation import FileChange as FileChange
from ._isolation import IsolationError as IsolationError
from ._isolation import IsolationMode as IsolationMode
from ._isolation import NotAGitRepositoryError as NotAGitRepositoryError
from ._run import FanoutObserver as FanoutObserver
from ._run import FanoutResult as FanoutResult
from ._run import default_patch_dir as default_patch_dir
from ._run import run_fanout as run_fanout

__all__ = [
    "ISOLATION_MODES",
    "FanoutObserver",
    "FanoutResult",
    "FileChange",
    "IsolationError",
    "IsolationMode",
    "NotAGitRepositoryError",
    "default_patch_dir",
    "run_fanout",
]
