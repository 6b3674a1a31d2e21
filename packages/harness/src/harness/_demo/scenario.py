"""What a scenario is: its rules, its body, and what it must end with.

Each scenario brings the rules it needs in the scripted model's script (matched by a unique
token in the conversation's first user message, so scenarios never share replies) and an
async body that returns a `SubagentResult`. This module imports no provider package, so the
runner and the catalogue both build on it without importing each other.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from subagent_core import SubagentResult

SHORT_GRACES = (0.5, 0.5, 1.0)
"""EOF, TERM and KILL graces for every provider the scenarios build."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioContext:
    """What a scenario body gets: the scripted model, a fresh workspace and state dir of its own.

    `state_dir` is where `harness acp-agent` / `sdk-runtime` children keep their sessions, so a
    scenario never writes into the user's own state directory; whoever builds the context owns
    it and removes it.
    """

    base_url: str
    workspace: Path
    state_dir: Path
    graces: tuple[float, float, float] = SHORT_GRACES


@dataclass(frozen=True, slots=True, kw_only=True)
class Expectation:
    """How a scenario must end; `output_contains` and `diagnostic` are exact checks."""

    stop_reason: str
    output_contains: str | None = None
    diagnostic: str | None = None
    """The exact diagnostic (None: there must be none)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """One row of the demo/e2e table."""

    name: str
    rules: Sequence[dict[str, Any]]
    body: Callable[[ScenarioContext], Awaitable[SubagentResult]]
    expect: Expectation
    keyed: bool = False
    extra_check: Callable[[ScenarioContext, SubagentResult], str | None] | None = field(
        default=None
    )
    """Returns a mismatch description, or None when the scenario's side effects are right."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioOutcome:
    """A finished scenario: its result and whether it matched."""

    name: str
    result: SubagentResult
    mismatch: str | None

    @property
    def matched(self) -> bool:
        return self.mismatch is None


def check(scenario: Scenario, context: ScenarioContext, result: SubagentResult) -> str | None:
    """None when `result` meets the expectation, else a short description of the mismatch."""
    expect = scenario.expect
    if result.stop_reason != expect.stop_reason:
        return f"expected stop reason {expect.stop_reason}"
    if expect.output_contains is not None and expect.output_contains not in result.output:
        return f"expected the output to contain {expect.output_contains!r}"
    if result.diagnostic != expect.diagnostic:
        if expect.diagnostic is None:
            return "expected no diagnostic"
        return "expected a diagnostic" if result.diagnostic is None else "unexpected diagnostic"
    if scenario.extra_check is not None:
        return scenario.extra_check(context, result)
    return None


def has_api_key() -> bool:
    """Whether the keyed scenarios can run."""
    return bool(os.environ.get("DEEPSEEK_API_KEY"))
