"""The scenario lists `harness demo`, `harness e2e` and `tests-e2e/` run."""

from __future__ import annotations

from . import bodies, keyed
from .scenario import Scenario


def demo_scenarios() -> list[Scenario]:
    """The keyless demo: every way of delegating, then a crash, a failed turn and a cancel."""
    return bodies.demo()


def e2e_scenarios() -> list[Scenario]:
    """The demo plus the failure and cancel paths."""
    return [*bodies.demo(), *bodies.failures()]


def keyed_scenarios() -> list[Scenario]:
    """Real-model scenarios; they need `DEEPSEEK_API_KEY`."""
    return keyed.keyed()
