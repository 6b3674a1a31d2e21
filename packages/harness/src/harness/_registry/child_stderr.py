"""Where the children of one `harness` command put their stderr: bounded logs, never our stderr.

A child's stderr is its own text (log lines, session ids, whatever it printed). Passed through,
it would land on the harness's stderr, which an agent running `harness` through its shell tool
reads along with stdout. So each `delegate` / `fanout` gives its children one directory under
the state directory, `child-stderr/<UTC time>-<pid>/<provider>/`, where every child's stderr
is one file of at most `subagent_core.kit.DEFAULT_CHILD_STDERR_BYTES` (its first and newest
part). `--child-stderr` also shows it live on this stderr, for a person at a terminal, and names
the directory at the end. The newest `KEEP_INVOCATIONS` directories are kept, older ones are
removed when a new one is made, so the logs stay bounded on disk too.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from subagent_core.kit import ChildStderr

from harness._config.paths import child_stderr_root

KEEP_INVOCATIONS: Final = 20
"""How many commands' log directories are kept (the newest)."""

_INVOCATION = re.compile(r"\d{8}T\d{6}\.\d{6}Z-\d+")
"""Only directories we named are ever removed."""


@dataclass(frozen=True, slots=True)
class ChildStderrLogs:
    """One command's child stderr logs: a directory, and whether a person watches live."""

    directory: Path
    """This command's directory; made only when a child writes to its stderr."""
    live: bool = False
    """`--child-stderr`: also copy each child's stderr to ours as it arrives."""

    def for_provider(self, name: str) -> ChildStderr:
        """The `child_stderr` of provider `name` (one subdirectory per provider)."""
        return ChildStderr(log_dir=self.directory / name, live=self.live)

    def location(self) -> str | None:
        """With `live` (the person asked to see it), the line naming the directory once some
        child wrote to its stderr; the path is ours, never the child's text."""
        if not self.live or not self.directory.is_dir():
            return None
        return f"harness: child stderr logged under {self.directory}"


def child_stderr_logs(*, live: bool) -> ChildStderrLogs:
    """A new directory name for this command's logs; the oldest beyond the kept ones go."""
    root = child_stderr_root()
    _prune(root)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    return ChildStderrLogs(root / f"{stamp}-{os.getpid()}", live=live)


def _prune(root: Path) -> None:
    """Removes our oldest directories so that, with the next one, `KEEP_INVOCATIONS` remain."""
    try:
        names = sorted(
            entry.name
            for entry in os.scandir(root)
            if entry.is_dir(follow_symlinks=False) and _INVOCATION.fullmatch(entry.name)
        )
    except OSError:
        return
    for name in names[: max(0, len(names) - (KEEP_INVOCATIONS - 1))]:
        shutil.rmtree(root / name, ignore_errors=True)
