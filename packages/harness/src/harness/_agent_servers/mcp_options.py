"""How `harness mcp` serves, and the one error a refused call raises (both light to import).

The server reads these before it answers `initialize`, so nothing here imports the registry,
the providers or the fan-out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from harness._registry.overrides import ApproveChoice

DEFAULT_MAX_RUNS: Final = 4
"""`--max-runs`: children alive at once, over every call."""
DEFAULT_MAX_QUEUED: Final = 16
"""`--max-queued`: calls waiting for a slot before one is refused."""


class ToolError(Exception):
    """A call refused before anything started; the message is ours (names and fixed words)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeOptions:
    """How `harness mcp` serves: its root, config and the bounds on its children."""

    root: Path
    """Every call's workspace must be this directory or inside it (absolute, resolved)."""
    config: Path | None = None
    """`--config`; else the root's `harness.toml`, else the user's."""
    approve: ApproveChoice = "reads"
    """`--approve`: every child's permission (`reads`: reads and searches, nothing else)."""
    max_runs: int = DEFAULT_MAX_RUNS
    max_queued: int = DEFAULT_MAX_QUEUED
    base_url: str | None = None
    model: str | None = None
    progress_interval_seconds: float = 10.0
    """How often a running call reports progress at least (within the 15 s promised)."""
