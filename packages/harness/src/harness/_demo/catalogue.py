"""The scenario lists `harness demo`, `harness e2e` and `tests-e2e/` run, and the two commands."""

from __future__ import annotations

import os

from harness._config.endpoint import MissingKeyError
from harness._config.settings import API_KEY_ENV

from . import bodies, keyed
from .runner import run_scenarios_cli
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


def demo_command(*, live: bool, json: bool) -> int:
    """`harness demo`: the keyless scenarios run and tabled; 0 only when every one matched."""
    return run_scenarios_cli(demo_scenarios(), title="harness demo", live=live, json=json)


def e2e_command(*, keyed: bool, live: bool, json: bool) -> int:
    """`harness e2e`: the end-to-end scenarios (and with `keyed` the real-model ones).

    Raises:
        MissingKeyError: `keyed` without `DEEPSEEK_API_KEY`.
    """
    scenarios = e2e_scenarios()
    if keyed:
        if not os.environ.get(API_KEY_ENV):
            raise MissingKeyError
        scenarios = [*scenarios, *keyed_scenarios()]
    return run_scenarios_cli(scenarios, title="harness e2e", live=live, json=json)
