"""Compatibility: the leak guard as an autouse fixture a conftest imports by name.

    from subagent_core.testing.pytest_fixtures import process_leak_guard as process_leak_guard

This was the way before `pytest_plugin`: it guards that conftest's tree and loads no hypothesis
profile. A new conftest calls `pytest_plugin.process_test_fixtures()` instead, which also binds
`anyio_backend` and loads the profile.
"""

from __future__ import annotations

from .pytest_plugin import leak_guard

__all__ = ["process_leak_guard"]

process_leak_guard = leak_guard()
