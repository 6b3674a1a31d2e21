"""What every case gets: the scratch directory and how many repetitions to make."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

PYTHON = sys.executable
BENCH = Path(__file__).resolve().parent


class BenchError(RuntimeError):
    """A subject did not do what it was measured doing (wrong result, process left alive)."""


@dataclass(frozen=True, slots=True)
class Context:
    work: Path
    """A scratch directory, removed after the run."""
    quick: bool
    figures: dict[str, str] = field(default_factory=dict[str, str])
    """Files a case wants written next to results.md (name -> text), e.g. an SVG plot."""

    def reps(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def write_json(self, name: str, data: object) -> str:
        path = self.work / name
        path.write_text(json.dumps(data), "utf-8")
        return str(path)


def live_descendants() -> list[int]:
    """Pids of this process's descendants that are still running (zombies count as gone).

    The containment guard server and its idle guards are infrastructure, not a run's leftovers.
    """
    import psutil
    from subagent_core.testing import containment_processes

    infrastructure = containment_processes()
    alive: list[int] = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.pid not in infrastructure and child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child.pid)
        except psutil.NoSuchProcess:
            continue
    return alive


async def wait_for_file(path: Path) -> None:
    """Polls for a readiness marker a child writes (a bench may poll; tests never do).

    Bounded at 30 s: a marker that never comes fails the case instead of hanging the suite.
    """
    import anyio

    with anyio.fail_after(30.0):
        while not path.exists():  # noqa: ASYNC110, ASYNC240 (a bench may poll)
            await anyio.sleep(0.002)
