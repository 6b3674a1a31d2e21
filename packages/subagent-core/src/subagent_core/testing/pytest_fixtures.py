"""pytest fixtures for process tests; a conftest imports the ones it wants.

    from subagent_core.testing.pytest_fixtures import process_leak_guard as process_leak_guard

Only this module imports pytest, so the package runs without it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from . import become_subreaper, kill_leaks, leaked_processes, track_spawns

_subreaper_ready = False


@pytest.fixture(autouse=True)
def process_leak_guard() -> Iterator[list[int]]:
    """Fails a test that leaves any spawned group member or descendant alive (zombies are gone)."""
    global _subreaper_ready
    if not _subreaper_ready:
        become_subreaper()
        _subreaper_ready = True
    with track_spawns() as groups:
        yield groups
    leaks = leaked_processes(groups)
    if leaks:
        kill_leaks(groups)
        pytest.fail("processes left behind: " + "; ".join(leaks), pytrace=False)
