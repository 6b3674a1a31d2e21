"""`harness mcp`'s tool arguments, read into frozen values with fixed-text refusals.

A malformed call is a tool error (`ToolArgumentError`) before anything is started; a refusal
names the argument, never repeats its value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

from harness.fanout import ISOLATION_MODES, IsolationMode

from .mcp_schemas import (
    AGENT_INPUTS,
    DELEGATE_INPUT,
    MAX_FANOUT_AGENTS,
    MAX_PROMPT_BYTES,
    MAX_PROTECT_GLOBS,
    MAX_WAIT_SECONDS,
    RUN_ID,
    SESSION_NAME,
)


class ToolArgumentError(ValueError):
    """A call's arguments are not what the tool takes (fixed text naming the argument)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DelegateArgs:
    """One child (or one turn of a kept session), as `delegate` and `delegate_start` take it."""

    agent: str
    prompt: str
    workspace: str | None = None
    """As given: relative to the server's root, or absolute (checked against the root later)."""
    session: str | None = None
    output_schema: dict[str, Any] | None = None
    timeout_seconds: float | None = None
    budget_tokens: int | None = None
    budget_usd: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FanoutArgs:
    """The same task on several agents, each in its own place."""

    agents: tuple[str, ...]
    prompt: str
    isolation: IsolationMode = "worktree"
    verify: str | None = None
    """A command run in each child's place once it settled (`pass`, `fail (exit N)`, …)."""
    protect: tuple[str, ...] = ()
    """Globs of files the child must not touch (beside the defaults) for its verify to count."""
    verify_timeout_seconds: float | None = None
    workspace: str | None = None
    timeout_seconds: float | None = None


class _Reader:
    """Takes a call's arguments apart; every refusal names the argument, never its value."""

    def __init__(self, tool: str, arguments: Mapping[str, Any] | None, allowed: set[str]) -> None:
        self._tool = tool
        self._args: Mapping[str, Any] = arguments or {}
        unknown = sorted(name for name in self._args if name not in allowed)
        if unknown:
            shown = ", ".join(_shown(name) for name in unknown[:5])
            raise ToolArgumentError(f"{tool} takes no argument {shown}")

    def _fail(self, name: str, problem: str) -> ToolArgumentError:
        return ToolArgumentError(f"{self._tool}: {name} {problem}")

    def required(self, name: str, *, max_bytes: int = 4096) -> str:
        value = self.text(name, max_bytes=max_bytes)
        if value is None:
            raise self._fail(name, "is required")
        return value

    def text(self, name: str, *, max_bytes: int = 4096) -> str | None:
        value = self._args.get(name)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self._fail(name, "must be a non-empty string")
        if len(value.encode("utf-8", "surrogatepass")) > max_bytes:
            raise self._fail(name, f"must be at most {max_bytes} bytes")
        return value

    def number(self, name: str, *, minimum: float = 0.0, maximum: float = math.inf) -> float | None:
        value = self._args.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._fail(name, "must be a number")
        number = float(value)
        if not math.isfinite(number) or number < minimum or number > maximum:
            raise self._fail(name, _range(minimum, maximum))
        return number

    def positive(self, name: str) -> float | None:
        number = self.number(name, minimum=-math.inf)
        if number is not None and number <= 0:
            raise self._fail(name, "must be greater than 0")
        return number

    def count(self, name: str) -> int | None:
        value = self._args.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self._fail(name, "must be a whole number of at least 1")
        return value

    def mapping(self, name: str) -> dict[str, Any] | None:
        value = self._args.get(name)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self._fail(name, "must be an object")
        return cast(dict[str, Any], value)

    def names(self, name: str, *, most: int, empty: bool = False) -> tuple[str, ...]:
        value = self._args.get(name)
        if value is None and empty:
            return ()
        if not isinstance(value, list) or not (value or empty):
            raise self._fail(name, "must be a non-empty list of names")
        items = cast(list[object], value)
        if len(items) > most:
            raise self._fail(name, f"may name at most {most}")
        if not all(isinstance(item, str) and item.strip() for item in items):
            raise self._fail(name, "must hold non-empty strings")
        return tuple(cast(list[str], items))

    def pattern(self, name: str, pattern: re.Pattern[str], problem: str) -> str | None:
        value = self.text(name)
        if value is not None and pattern.fullmatch(value) is None:
            raise self._fail(name, problem)
        return value


def _shown(name: str) -> str:
    """An unknown argument's name, as given if it is short and plain, else a placeholder."""
    plain = re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", name) is not None
    return f'"{name}"' if plain else "(an unnamed one)"


def _range(minimum: float, maximum: float) -> str:
    if math.isinf(maximum):
        return f"must be at least {minimum:g}"
    return f"must be between {minimum:g} and {maximum:g}"


_SESSION_PROBLEM: Final = (
    "takes 1-64 letters, digits, '.', '_' or '-', starting with one of the first two"
)


def delegate_args(tool: str, arguments: Mapping[str, Any] | None) -> DelegateArgs:
    """`delegate` / `delegate_start` arguments.

    Raises:
        ToolArgumentError: a missing, unknown or malformed argument.
    """
    reader = _Reader(tool, arguments, set(DELEGATE_INPUT["properties"]))
    return DelegateArgs(
        agent=reader.required("agent", max_bytes=256),
        prompt=reader.required("prompt", max_bytes=MAX_PROMPT_BYTES),
        workspace=reader.text("workspace"),
        session=reader.pattern("session", SESSION_NAME, _SESSION_PROBLEM),
        output_schema=reader.mapping("output_schema"),
        timeout_seconds=reader.positive("timeout_seconds"),
        budget_tokens=reader.count("budget_tokens"),
        budget_usd=reader.positive("budget_usd"),
    )


def fanout_args(arguments: Mapping[str, Any] | None) -> FanoutArgs:
    """`fanout` arguments.

    Raises:
        ToolArgumentError: a missing, unknown or malformed argument.
    """
    allowed = {"agents", "prompt", "isolation", "verify", "protect", "verify_timeout_seconds"}
    reader = _Reader("fanout", arguments, allowed | set(AGENT_INPUTS))
    prompt = reader.required("prompt", max_bytes=MAX_PROMPT_BYTES)
    isolation = reader.text("isolation") or "worktree"
    if isolation not in ISOLATION_MODES:
        raise ToolArgumentError(f"fanout: isolation must be one of {', '.join(ISOLATION_MODES)}")
    return FanoutArgs(
        agents=reader.names("agents", most=MAX_FANOUT_AGENTS),
        prompt=prompt,
        isolation=isolation,
        verify=reader.text("verify"),
        protect=reader.names("protect", most=MAX_PROTECT_GLOBS, empty=True),
        verify_timeout_seconds=reader.positive("verify_timeout_seconds"),
        workspace=reader.text("workspace"),
        timeout_seconds=reader.positive("timeout_seconds"),
    )


def run_id_arg(tool: str, arguments: Mapping[str, Any] | None, *extra: str) -> str:
    """The `run_id` argument (and nothing unknown besides `extra`).

    Raises:
        ToolArgumentError: missing, unknown or not a run id this server hands out.
    """
    reader = _Reader(tool, arguments, {"run_id", *extra})
    reader.required("run_id", max_bytes=64)
    run_id = reader.pattern("run_id", RUN_ID, "is not a run id from delegate_start")
    assert run_id is not None
    return run_id


def wait_seconds_arg(arguments: Mapping[str, Any] | None) -> float:
    """`delegate_result`'s `wait_seconds` (0 when not given).

    Raises:
        ToolArgumentError: not a number between 0 and `MAX_WAIT_SECONDS`.
    """
    reader = _Reader("delegate_result", arguments, {"run_id", "wait_seconds"})
    return reader.number("wait_seconds", maximum=MAX_WAIT_SECONDS) or 0.0


def session_arg(arguments: Mapping[str, Any] | None) -> str:
    """`session_close`'s `session`.

    Raises:
        ToolArgumentError: missing, unknown or not a session name.
    """
    reader = _Reader("session_close", arguments, {"session"})
    reader.required("session", max_bytes=64)
    name = reader.pattern("session", SESSION_NAME, _SESSION_PROBLEM)
    assert name is not None
    return name


def no_args(tool: str, arguments: Mapping[str, Any] | None) -> None:
    """A tool that takes nothing.

    Raises:
        ToolArgumentError: any argument.
    """
    _Reader(tool, arguments, set())
