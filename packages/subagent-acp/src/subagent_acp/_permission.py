"""Permission decisions: a fixed policy or the host's callback, recorded as safe facts.

Every decision — a child's `session/request_permission`, and each client file write or
terminal the parent runs for the child — goes through one `Permissions` object per run, which
keeps the permission line for the diagnostic and publishes a `PermissionEvent`. Nothing is
remembered between requests (an `allow_always` answer does not grant the next one).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, cast, get_args

from subagent_core import (
    PermissionEvent,
    SubagentEvent,
    ToolKind,
    permission_decision,
    permission_line,
    tool_kind,
)

from ._facts import REFUSED_DECISIONS

_log = logging.getLogger("subagent_acp")

OptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
"""The ACP permission option kinds: the answers a host can pick."""

_OPTION_KINDS: Final = get_args(OptionKind)
_ALLOW_KINDS: Final = ("allow_once", "allow_always")


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionAsk:
    """What a permission callback is asked: closed facts, plus child text for a human.

    `title` and `raw_input` are written by the child (untrusted): show them to a person, never
    feed them to a model as instructions or into a diagnostic.
    """

    tool_kind: ToolKind
    """What the child wants to do (the ACP set; anything else is `other`)."""
    option_kinds: tuple[OptionKind, ...]
    """The kinds of the options offered, in order (unknown kinds left out)."""
    title: str | None
    """Untrusted: the child's description of the action."""
    raw_input: object
    """Untrusted: the child's raw tool input (a JSON value), or `None`."""


PermissionCallback = Callable[[PermissionAsk], Awaitable[str | None]]
"""Asks the host: returns the option kind to select (the first offered option of that kind is
chosen) or `None` to answer `cancelled`. A kind that is not offered, or a callback that raises,
also answers `cancelled`."""

PermissionSetting = Literal["allow", "reject"] | PermissionCallback
"""`ACPConfig.permission`: a fixed policy or a callback."""

Option = tuple[str, str]
"""`(option id, option kind)` as the child offered it."""

GATE_OPTIONS: Final[tuple[Option, ...]] = (("allow", "allow_once"), ("reject", "reject_once"))
"""The choices of a decision the parent makes for its own client services (fs writes,
terminals)."""


def _offered_kinds(options: Sequence[Option]) -> tuple[OptionKind, ...]:
    return tuple(cast(OptionKind, kind) for _, kind in options if kind in _OPTION_KINDS)


def first_of_kind(options: Sequence[Option], kinds: Sequence[str]) -> Option | None:
    """The first option whose kind is one of `kinds`."""
    for option in options:
        if option[1] in kinds:
            return option
    return None


class Permissions:
    """One run's permission decisions and their safe record."""

    def __init__(
        self, setting: PermissionSetting, publish: Callable[[SubagentEvent], None]
    ) -> None:
        self._setting = setting
        self._publish = publish
        self._policy: Literal["allow", "reject", "ask"] = (
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
        options: Sequence[Option],
        *,
        title: str | None,
        raw_input: object,
    ) -> Option | None:
        """Chooses an option (or `None`: `cancelled`) and records the fact."""
        choice = await self._choose(kind, options, title, raw_input)
        decision = "cancelled" if choice is None else choice[1]
        if self.recording:
            self.line = permission_line(self._policy, tool_kind(kind), decision)
            if decision in REFUSED_DECISIONS:
                self.refused = self.line
            self._publish(
                PermissionEvent(
                    tool_kind=None if kind is None else tool_kind(kind),
                    policy=self._policy,
                    decision=permission_decision(decision),
                )
            )
        return choice

    async def allows(self, kind: ToolKind, *, title: str | None, raw_input: object) -> bool:
        """Decides a client service the parent would run for the child."""
        choice = await self.decide(kind, GATE_OPTIONS, title=title, raw_input=raw_input)
        return choice is not None and choice[1] in _ALLOW_KINDS

    async def _choose(
        self, kind: object, options: Sequence[Option], title: str | None, raw_input: object
    ) -> Option | None:
        setting = self._setting
        if isinstance(setting, str):
            return first_of_kind(options, _ALLOW_KINDS) if setting == "allow" else None
        ask = PermissionAsk(
            tool_kind=tool_kind(kind),
            option_kinds=_offered_kinds(options),
            title=title,
            raw_input=raw_input,
        )
        try:
            picked = cast(object, await setting(ask))  # a host callback may return anything
        except Exception:
            _log.warning("the permission callback raised; answering cancelled", exc_info=True)
            return None
        if picked is None:
            return None
        return first_of_kind(options, (picked,)) if isinstance(picked, str) else None
