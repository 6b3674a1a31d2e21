"""The third-release seam names this provider is written against, until core ships them.

`subagent_core` gains provider-neutral permissions, deadlines, cost and structured output
(`core.md`, "Third release"). Every use in this package goes through this one module, so the
switch to `subagent_core` / `subagent_core.kit` is a change of imports here and nothing else.
The stand-ins follow the binding names and semantics; they hold no state between runs.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final, Literal, cast

import anyio
from subagent_core import (
    PermissionEvent,
    SubagentEvent,
    SubagentResult,
    SubagentStartError,
    ToolKind,
    Usage,
    safe_tool_kind,
)

_log = logging.getLogger("subagent_claude")

DEFAULT_STARTUP_TIMEOUT_SECONDS: Final = 60.0
DEFAULT_IDLE_TIMEOUT_SECONDS: Final = 1800.0

OptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
_ALLOW: Final = ("allow_once", "allow_always")
_REJECT: Final = ("reject_once", "reject_always")
REFUSED_DECISIONS: Final = frozenset({"cancelled", "reject_once", "reject_always"})


@dataclass(frozen=True, slots=True)
class Cost:
    """An amount of money in a currency (three upper-case ASCII letters)."""

    amount: float
    currency: str

    def __post_init__(self) -> None:
        if re.fullmatch(r"[A-Z]{3}", self.currency) is None:
            raise ValueError("Cost.currency must be three upper-case ASCII letters")


def safe_cost(amount: object, currency: str) -> Cost | None:
    """A `Cost`, or `None` when the amount is not a finite non-negative number."""
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        return None
    value = float(amount)
    if not math.isfinite(value) or value < 0:
        return None
    try:
        return Cost(value, currency)
    except ValueError:
        return None


_USAGE_FIELDS: Final = frozenset(f.name for f in fields(Usage))
_RESULT_FIELDS: Final = frozenset(f.name for f in fields(SubagentResult))


def make_usage(
    input_tokens: int | None, output_tokens: int | None, cached: int | None, cost: Cost | None
) -> Usage:
    """A core `Usage` with every field this core knows (cost and cache once the seam lands)."""
    values: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if "cached_input_tokens" in _USAGE_FIELDS:
        values["cached_input_tokens"] = cached
    if "cost" in _USAGE_FIELDS:
        values["cost"] = cost
    return Usage(**values)


def make_result(
    stop_reason: Any,
    output: str,
    diagnostic: str | None,
    usage: Usage | None,
    structured_output: object | None,
) -> SubagentResult:
    """A core `SubagentResult`, with `structured_output` once the seam lands."""
    values: dict[str, Any] = {
        "stop_reason": stop_reason,
        "output": output,
        "diagnostic": diagnostic,
        "usage": usage,
    }
    if "structured_output" in _RESULT_FIELDS:
        values["structured_output"] = structured_output
    return SubagentResult(**values)


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionAsk:
    """What a permission callback is asked; `title` and `raw_input` are untrusted child text."""

    tool_kind: ToolKind
    option_kinds: tuple[OptionKind, ...]
    title: str | None
    raw_input: object


PermissionCallback = Callable[[PermissionAsk], Awaitable[str | None]]
PermissionSetting = Literal["allow", "reject"] | Mapping[str, str] | PermissionCallback


def check_permission(value: object, *, owner: str) -> PermissionSetting:
    """Validates a `permission` setting; the message names `owner` and never the value."""
    if value in ("allow", "reject"):
        return cast(PermissionSetting, value)
    if isinstance(value, Mapping):
        policy = cast(Mapping[object, object], value)
        if "*" in policy and all(
            isinstance(k, str) and v in ("allow", "reject") for k, v in policy.items()
        ):
            return cast(PermissionSetting, dict(policy))
        raise ValueError(
            f'{owner}.permission mapping must map tool kinds to "allow"/"reject" with a "*" default'
        )
    if not isinstance(value, str) and callable(value):
        return cast(PermissionCallback, value)
    raise ValueError(
        f'{owner}.permission must be "allow", "reject", a mapping or an async callable'
    )


def permission_line(protocol: str, policy: str, tool_kind: str, decision: str) -> str:
    """`<Protocol> permission (policy: …; tool kind: …; decision: …)`."""
    kind = safe_tool_kind(tool_kind)
    return f"{protocol} permission (policy: {policy}; tool kind: {kind}; decision: {decision})"


class PermissionGate:
    """One run's permission decisions and their safe record."""

    def __init__(
        self, setting: PermissionSetting, protocol: str, publish: Callable[[SubagentEvent], None]
    ) -> None:
        self._setting = setting
        self._protocol = protocol
        self._publish = publish
        self.line: str | None = None
        self.refused: str | None = None
        self.recording = True

    async def decide(
        self, kind: ToolKind, offered: Sequence[OptionKind], *, title: str | None, raw_input: object
    ) -> OptionKind | None:
        """The option kind chosen (`None`: `cancelled`); records the line and an event."""
        setting = self._setting
        policy: str
        choice: OptionKind | None
        if isinstance(setting, str | Mapping):
            mapping = cast(Mapping[str, str], setting) if isinstance(setting, Mapping) else None
            policy = cast(str, setting) if mapping is None else mapping.get(kind, mapping["*"])
            wanted = _ALLOW if policy == "allow" else _REJECT
            choice = next((k for k in offered if k in wanted), None)
        else:
            policy = "ask"
            ask = PermissionAsk(
                tool_kind=kind, option_kinds=tuple(offered), title=title, raw_input=raw_input
            )
            try:
                picked = cast(object, await setting(ask))
            except Exception:
                _log.warning("the permission callback raised; answering cancelled", exc_info=True)
                picked = None
            choice = cast(OptionKind, picked) if picked in offered else None
        decision = "cancelled" if choice is None else choice
        if self.recording:
            self.line = permission_line(self._protocol, policy, kind, decision)
            if decision in REFUSED_DECISIONS:
                self.refused = self.line
            self._publish(PermissionEvent(tool_kind=kind, policy=policy, decision=decision))  # type: ignore[arg-type]
        return choice


def check_timeout(value: object, *, owner: str, name: str) -> float | None:
    """`None`, or a positive finite number of seconds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{owner}.{name} must be a number of seconds or None")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{owner}.{name} must be positive and finite, or None")
    return seconds


class IdleDeadline:
    """Expires when no `touch()` came for `seconds` (never, with `None`)."""

    def __init__(self, seconds: float | None) -> None:
        self._seconds = seconds
        self._last = anyio.current_time()

    def touch(self) -> None:
        """A frame arrived."""
        self._last = anyio.current_time()

    async def expired(self) -> None:
        """Returns once the deadline passed without a touch."""
        if self._seconds is None:
            await anyio.sleep_forever()
            return
        while True:
            remaining = self._last + self._seconds - anyio.current_time()
            if remaining <= 0:
                return
            await anyio.sleep(remaining)


class StructuredOutputError(ValueError):
    """The text is not JSON, or does not validate against the schema."""


def parse_structured_output(schema: Mapping[str, Any], text: str) -> object:
    """The parsed value of `text`, validated with `jsonschema` when it is importable."""
    try:
        value: object = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise StructuredOutputError("not JSON") from error
    try:
        import jsonschema  # pyright: ignore[reportMissingModuleSource]
    except ImportError:
        return value
    try:
        jsonschema.validate(value, dict(schema))  # pyright: ignore[reportUnknownMemberType]
    except jsonschema.ValidationError as error:  # pyright: ignore[reportUnknownMemberType]
        raise StructuredOutputError("does not validate") from error
    except jsonschema.SchemaError as error:  # pyright: ignore[reportUnknownMemberType]
        raise StructuredOutputError("the schema is invalid") from error
    return value


def aborted_before_start_text() -> str:
    """The fixed text of a start that a cancel stopped with cleanup confirmed."""
    return "subagent request was aborted before the Claude child started"


def compose_start_error(
    *, cancelled: bool, startup_line: str | None, cleanup_line: str | None
) -> SubagentStartError:
    """The start error by the seam's composition rules, with the Claude fixed text."""
    if cancelled:
        if cleanup_line is None:
            return SubagentStartError(aborted_before_start_text())
        return SubagentStartError(cleanup_line, cleanup_line)
    parts = [line for line in (startup_line, cleanup_line) if line is not None]
    diagnostic = "\n".join(parts) if parts else None
    return SubagentStartError(diagnostic or "subagent failed to start", diagnostic)
