"""Fan-out: the same task on several agents at once, each in its own place, compared after.

The public library call is `run_fanout(registry, agents, request, *, verify=…, protect=…)`;
`harness fanout` is the command around it, and `list`, `apply`, `report` what follows a run.

```
harness fanout PROMPT -a A -a B ──▶ _command: agents resolved as `delegate -a` resolves one,
                                      one registry (_registry), Ctrl-C / SIGTERM ─▶ cancel
                                          │
run_fanout (_run) ◀───────────────────────┘
  _isolation.open_isolation: a git worktree (or a copy, or the workspace itself) per child,
    all from one start point (_git: HEAD + the user's uncommitted changes, as a commit)
  _record: the run's folder under the state directory, run.json written at start and end
    one task per child, at most `concurrency` at once:
      its place ─▶ protected files hashed (_verify) ─▶ start it there ─▶ watch it (deadline)
      ─▶ dispose ─▶ its changes as a patch ─▶ --verify CMD in its place (_verify)
  ─▶ one FanoutResult per agent (_result), ranked, in the order asked
                                          │
_view: a live row per child while they work, then the table best first (or NDJSON records)
_report + _highlight: the run as one self-contained HTML page (no script, all escaped)

harness fanout list / apply / report ──▶ _manage ──▶ _record (the run) ──▶ _apply: one
  child's patch merged on git objects first, then renamed into the work tree whole or not at all
```
"""

from ._git import IsolationError as IsolationError
from ._git import NotAGitRepositoryError as NotAGitRepositoryError
from ._isolation import ISOLATION_MODES as ISOLATION_MODES
from ._isolation import FileChange as FileChange
from ._isolation import IsolationMode as IsolationMode
from ._result import FanoutObserver as FanoutObserver
from ._result import FanoutResult as FanoutResult
from ._result import VerifyObserver as VerifyObserver
from ._run import default_patch_dir as default_patch_dir
from ._run import run_fanout as run_fanout
from ._verify import DEFAULT_PROTECT as DEFAULT_PROTECT
from ._verify import DEFAULT_VERIFY_TIMEOUT_SECONDS as DEFAULT_VERIFY_TIMEOUT_SECONDS
from ._verify import VerifyOutcome as VerifyOutcome
from ._verify import VerifyStatus as VerifyStatus

__all__ = [
    "DEFAULT_PROTECT",
    "DEFAULT_VERIFY_TIMEOUT_SECONDS",
    "ISOLATION_MODES",
    "FanoutObserver",
    "FanoutResult",
    "FileChange",
    "IsolationError",
    "IsolationMode",
    "NotAGitRepositoryError",
    "VerifyObserver",
    "VerifyOutcome",
    "VerifyStatus",
    "default_patch_dir",
    "run_fanout",
]
