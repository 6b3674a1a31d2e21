"""The test plumbing every process-testing tree shares, as a pytest plugin.

Installing subagent-core registers this module with pytest (the `pytest11` entry point
`subagent_core`, as anyio registers `anyio.pytest_plugin`), so it is loaded in every pytest
session of every project that installs the package, including projects that have never heard
of it. Loaded that way it changes nothing: it offers the `process_leak_guard` fixture to a test
that asks for it by name (or through `pytest.mark.usefixtures`) and defines no autouse fixture,
no `anyio_backend` and no hypothesis profile. The guard makes the whole test process a child
subreaper and fails any test that leaves a descendant alive: a suite that keeps a server
process for its session would fail, so nobody gets it without asking. An `anyio_backend` here
would replace anyio's own (module-scoped, one run per installed backend) for every suite.

A test tree opts in with one assignment in its conftest.py:

    from subagent_core.testing.pytest_plugin import process_test_fixtures

    anyio_backend, process_leak_guard = process_test_fixtures()

The fixtures a conftest binds are visible to that directory's tests alone, so two trees of one
session can differ (subagent-ray's tests run a local cluster whose daemons are this process's
children: its conftest takes `anyio_backend = asyncio_backend()` without the guard). The call,
not the import, opts in: a plugin module's own fixtures are global, so the tree's autouse guard
is made fresh for each conftest rather than defined at module level. `pytest_plugins` in a
conftest is no answer either: it registers the module for the whole session, and pytest refuses
it in a conftest found during collection rather than at startup (as `pytest packages/` finds
each package's). `-p no:subagent_core` keeps the plugin out of a session altogether.

The call also loads the hypothesis profile "loaded" (no per-example deadline: a loaded machine
runs examples slowly, and every test has its own timeout) when hypothesis is installed:
subagent-core does not depend on it. A profile is process-wide and `@given` reads it when a
test module is imported, so it is loaded at conftest import, before the tree's modules.

Only this module imports pytest; the rest of `subagent_core.testing` runs without it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Final

import pytest

from . import become_subreaper, kill_leaks, leaked_processes, track_spawns

__all__ = [
    "TEST_GRACES",
    "asyncio_backend",
    "leak_guard",
    "process_leak_guard",
    "process_test_fixtures",
]

TEST_GRACES: Final[Mapping[str, float]] = MappingProxyType(
    {
        "dispose_eof_grace_seconds": 0.5,
        "dispose_grace_seconds": 0.5,
        "dispose_kill_grace_seconds": 1.0,
    }
)
"""Short teardown graces for a provider config (`**TEST_GRACES`): teardown tests stay quick.

They bound each step of the ladder; no test decides an outcome by them.
"""

_PROFILE = "loaded"
_subreaper_ready = False
_profile_loaded = False


def _guard() -> Iterator[list[int]]:
    """The leak guard's body: yields the spawned leaders' pids, then fails on any survivor."""
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


@pytest.fixture
def process_leak_guard() -> Iterator[list[int]]:
    """Fails the test if it leaves any spawned group member or descendant alive (zombies are gone).

    Yields the leader pid of every managed process the test spawns. Survivors are killed and
    reaped before the failure. The guard server and its idle guards are infrastructure; a guard
    whose tree is alive is not. On request here; `leak_guard()` makes it autouse for a tree.
    """
    yield from _guard()


def leak_guard() -> object:
    """A fresh autouse `process_leak_guard` for a conftest to bind: it guards that tree only."""

    def guarded() -> Iterator[list[int]]:
        """Fails the test if it leaves any spawned process alive (see `process_leak_guard`)."""
        yield from _guard()

    return pytest.fixture(autouse=True, name="process_leak_guard")(guarded)


def asyncio_backend() -> object:
    """A fresh `anyio_backend` fixture ("asyncio", per test) for a conftest to bind."""

    def backend() -> str:
        """Every anyio test of the tree runs once, on asyncio."""
        return "asyncio"

    return pytest.fixture(name="anyio_backend")(backend)


def process_test_fixtures() -> tuple[object, object]:
    """This tree's `anyio_backend` and autouse `process_leak_guard`; loads the hypothesis profile.

    Bind both in the tree's conftest: `anyio_backend, process_leak_guard = process_test_fixtures()`.
    """
    _load_hypothesis_profile()
    return asyncio_backend(), leak_guard()


def _load_hypothesis_profile() -> None:
    """Registers and loads the "loaded" profile once, when hypothesis is installed."""
    global _profile_loaded
    if _profile_loaded:
        return
    try:
        from hypothesis import settings
    except ImportError:
        return
    settings.register_profile(_PROFILE, deadline=None)
    settings.load_profile(_PROFILE)
    _profile_loaded = True
