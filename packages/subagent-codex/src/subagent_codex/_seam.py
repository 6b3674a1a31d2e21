"""The third-release seam names this provider is written against, in one place.

`subagent_core.kit` (permission gate, deadlines, structured output, the `Codex` start-error
texts) is being introduced on `main` while this package is written. Every other module imports
these names from here only, under the seam's binding names, so the switch to core's versions is
a change of this one module into re-exports; nothing here is meant to outlive it.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal, cast, get_args

import anyio
from subagent_core import (
    PermissionEvent,
    SubagentEvent,
    SubagentStartError,
    ToolKind,
    permission_decision,
    tool_kind,
)

_log = logging.getLogger("subagent_codex")

OptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
"""The answers a host can pick for a permission request."""

_OPTION_KINDS: Final = get_args(OptionKind)
_ALLOWING: Final = frozenset({"allow_once", "allow_always"})
_REFUSED: Final = frozenset({"cancelled", "reject_once", "reject_always"})


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionAsk:
    """What a permission callback is asked: closed facts, plus child text for a human.

    `title` and `raw_input` are written by the child (untrusted): show them to a person, never
    feed them to a model as instructions or into a diagnostic.
    """

    tool_kind: ToolKind
    """What the child wants to do (`execute` for a command, `edit` for a file change)."""
    option_kinds: tuple[OptionKind, ...]
    """The kinds of the answers offered, in order."""
    title: str | None
    """Untrusted: the child's description of the action."""
    raw_input: object
    """Untrusted: the child's raw request parameters (a JSON value), or `None`."""


PermissionCallback = Callable[[PermissionAsk], Awaitable[str | None]]
"""Asks the host: returns the option kind to select, or `None` to refuse (`cancelled`)."""

PerKindPolicy = Mapping[str, Literal["allow", "reject"]]
"""Tool kind → `allow`/`reject`, with a `"*"` default."""

PermissionSetting = Literal["allow", "reject"] | PerKindPolicy | PermissionCallback
"""A fixed policy, a per-kind policy or a callback."""

READS_POLICY: Final[PerKindPolicy] = {"read": "allow", "search": "allow", "*": "reject"}
"""`--approve reads`: reading and searching are allowed, everything else refused."""


def check_permission(value: object, *, owner: str) -> PermissionSetting:
    """Validates a `permission` setting.

    Raises:
        ValueError: not `"allow"`, `"reject"`, a per-kind mapping or a callable.
    """
    if value == "allow":
        return "allow"
    if value == "reject":
        return "reject"
    if isinstance(value, Mapping):
        policy: dict[str, Literal["allow", "reject"]] = {}
        for kind, answer in cast(Mapping[object, object], value).items():
            if not isinstance(kind, str) or answer not in ("allow", "reject"):
                raise ValueError(
                    f"{owner}.permission maps a tool kind to something other than allow/reject"
                )
            policy[kind] = "allow" if answer == "allow" else "reject"
        return policy
    if not isinstance(value, str) and callable(value):
        return cast(PermissionCallback, value)
    raise ValueError(
        f'{owner}.permission must be "allow", "reject", a per-kind mapping or an async callable'
    )


def permission_line(protocol: str, policy: str, kind: str | None, decision: str | None) -> str:
    """Renders `<Protocol> permission (policy: …; tool kind: …; decision: …)`."""
    fields = [f"policy: {policy}"]
    if kind is not None:
        fields.append(f"tool kind: {tool_kind(kind)}")
    if decision is not None:
        fields.append(f"decision: {decision}")
    return f"{protocol} permission ({'; '.join(fields)})"


class PermissionGate:
    """One run's permission decisions and their safe record.

    Nothing is remembered between requests: an `allow_always` answer does not grant the next.
    """

    def __init__(
        self,
        setting: PermissionSetting,
        protocol: str,
        publish: Callable[[SubagentEvent], None],
    ) -> None:
        self._setting = setting
        self._protocol = protocol
        self._publish = publish
        self.policy: Literal["allow", "reject", "ask"] = (
            "allow" if setting == "allow" else "reject" if setting == "reject" else "ask"
        )
        self.line: str | None = None
        """The permission line of the latest decision."""
        self.refused: str | None = None
        """The permission line of the latest decision that refused the child something."""
        self.recording = True
        """Cleared when the run settles: later decisions are still made, not recorded."""

    async def decide(
        self,
        kind: object,
        offered: Sequence[OptionKind],
        *,
        title: str | None,
        raw_input: object,
    ) -> OptionKind | None:
        """Chooses one of `offered` (or `None`: `cancelled`) and records the fact."""
        closed = tool_kind(kind)
        policy, choice = await self._choose(closed, offered, title, raw_input)
        decision = "cancelled" if choice is None else choice
        if self.recording:
            self.line = permission_line(self._protocol, policy, closed, decision)
            if decision in _REFUSED:
                self.refused = self.line
            self._publish(
                PermissionEvent(
                    tool_kind=closed, policy=policy, decision=permission_decision(decision)
                )
            )
        return choice

    async def _choose(
        self, kind: ToolKind, offered: Sequence[OptionKind], title: str | None, raw: object
    ) -> tuple[Literal["allow", "reject", "ask"], OptionKind | None]:
        setting = self._setting
        if isinstance(setting, str | Mapping):
            policy: PerKindPolicy = (
                {"*": "allow" if setting == "allow" else "reject"}
                if isinstance(setting, str)
                else cast(PerKindPolicy, setting)
            )
            answer = policy.get(kind, policy.get("*"))
            if answer == "allow":
                return "allow", next((o for o in offered if o in _ALLOWING), None)
            return "reject", None
        ask = PermissionAsk(
            tool_kind=kind,
            option_kinds=tuple(o for o in offered if o in _OPTION_KINDS),
            title=title,
            raw_input=raw,
        )
        try:
            picked = cast(object, await setting(ask))  # a host callback may return anything
        except Exception:
            _log.warning("the permission callback raised; answering cancelled", exc_info=True)
            return "ask", None
        if isinstance(picked, str) and picked in offered:
            return "ask", cast(OptionKind, picked)
        return "ask", None


def allows(kind: OptionKind | None) -> bool:
    """True when a decision lets the child go ahead."""
    return kind in _ALLOWING


DEFAULT_STARTUP_TIMEOUT_SECONDS: Final = 60.0
"""Spawn to publication."""
DEFAULT_IDLE_TIMEOUT_SECONDS: Final = 1800.0
"""After publication, the longest time with no frame at all from the child."""


def check_timeout(value: object, *, owner: str, name: str) -> float | None:
    """Validates a deadline: `None` disables it, else positive and finite seconds.

    Raises:
        ValueError: anything else.
    """
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
        """Notes a frame received now."""
        self._last = anyio.current_time()

    async def expired(self) -> None:
        """Returns once `seconds` passed with no touch."""
        seconds = self._seconds
        if seconds is None:
            await anyio.sleep_forever()
            return
        while True:
            left = self._last + seconds - anyio.current_time()
            if left <= 0:
                return
            await anyio.sleep(left)


class StructuredOutputError(Exception):
    """The final answer is not JSON that validates against the request's schema."""


def parse_structured_output(schema: Mapping[str, object], text: str) -> object:
    """Parses `text` as JSON and validates it against `schema` when `jsonschema` is importable.

    Raises:
        StructuredOutputError: not JSON, or not valid against the schema.
    """
    try:
        value = cast(object, json.loads(text))
    except ValueError:
        raise StructuredOutputError("not JSON") from None
    try:
        import jsonschema  # pyright: ignore[reportMissingModuleSource]
    except ImportError:
        return value
    try:
        jsonschema.validate(value, dict(schema))  # pyright: ignore[reportUnknownMemberType]
    except jsonschema.ValidationError:  # pyright: ignore[reportUnknownMemberType]
        raise StructuredOutputError("does not validate") from None
    except jsonschema.SchemaError:  # pyright: ignore[reportUnknownMemberType]
        raise StructuredOutputError("bad schema") from None
    return value


ABORTED_BEFORE_START: Final = "subagent request was aborted before the Codex child started"


def compose_start_error(
    *, cancelled: bool, startup_line: str | None, cleanup_line: str | None
) -> SubagentStartError:
    """The start error from the facts, by the seam's composition rules (see `core.md`)."""
    if cancelled:
        if cleanup_line is None:
            return SubagentStartError(ABORTED_BEFORE_START)
        return SubagentStartError(cleanup_line, cleanup_line)
    parts = [line for line in (startup_line, cleanup_line) if line is not None]
    diagnostic = "\n".join(parts) if parts else None
    return SubagentStartError(diagnostic or "subagent failed to start", diagnostic)
