"""The pytest plugin: inert where it is merely installed, the whole plumbing where a tree opts in.

Each case runs a separate pytest session over a throwaway project, as a stranger's suite would.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

STRANGER = """
import pytest
from hypothesis import settings


def test_nothing_is_switched_on(request):
    assert request.config.pluginmanager.has_plugin("subagent_core")
    assert "process_leak_guard" not in request.fixturenames
    # Hypothesis's own choice ("default", or "ci" under CI=true), never the plugin's profile.
    assert settings.get_current_profile_name() in ("default", "ci")


@pytest.mark.anyio
async def test_anyio_keeps_its_own_backend(request, anyio_backend):
    assert request._fixture_defs["anyio_backend"].scope == "module"


def test_the_guard_is_there_on_request(process_leak_guard):
    assert process_leak_guard == []
"""

OPTED_IN_CONFTEST = """
from subagent_core.testing.pytest_plugin import process_test_fixtures

anyio_backend, process_leak_guard = process_test_fixtures()
"""

OPTED_IN = """
import subprocess
import sys

import pytest
from hypothesis import settings


def test_the_profile_and_the_guard_are_on(request):
    assert settings.get_current_profile_name() == "loaded"
    assert settings.default.deadline is None
    assert "process_leak_guard" in request.fixturenames


@pytest.mark.anyio
async def test_asyncio_once_per_test(request, anyio_backend):
    assert anyio_backend == "asyncio"
    assert request._fixture_defs["anyio_backend"].scope == "function"


def test_a_leak_fails(process_leak_guard):
    subprocess.Popen([sys.executable, "-c", "import threading; threading.Event().wait()"])
"""

BACKEND_ONLY_CONFTEST = """
from subagent_core.testing.pytest_plugin import asyncio_backend

anyio_backend = asyncio_backend()
"""

BACKEND_ONLY = """
import pytest


@pytest.mark.anyio
async def test_asyncio_without_the_guard(request, anyio_backend):
    assert anyio_backend == "asyncio"
    assert "process_leak_guard" not in request.fixturenames
"""


def _project(root: Path, files: dict[str, str]) -> Path:
    # Its own ini file: the session must not pick up this repository's configuration.
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


async def _pytest(root: Path) -> str:
    with anyio.fail_after(90):
        done = await anyio.run_process(
            [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", str(root)],
            cwd=root,
            check=False,
        )
    return done.stdout.decode()


async def test_installed_alone_it_changes_nothing(tmp_path: Path) -> None:
    out = await _pytest(_project(tmp_path, {"test_stranger.py": STRANGER}))
    assert "3 passed" in out, out


async def test_a_tree_that_opts_in_gets_the_plumbing_and_its_neighbour_does_not(
    tmp_path: Path,
) -> None:
    files = {
        "opted_in/conftest.py": OPTED_IN_CONFTEST,
        "opted_in/test_opted_in.py": OPTED_IN,
        "backend_only/conftest.py": BACKEND_ONLY_CONFTEST,
        "backend_only/test_backend_only.py": BACKEND_ONLY,
    }
    out = await _pytest(_project(tmp_path, files))
    assert "4 passed, 1 error" in out, out
    assert "ERROR opted_in/test_opted_in.py::test_a_leak_fails" in out, out
    assert "processes left behind: descendant pid" in out, out
