"""Permission, provider-neutral: what a host is asked, how it may answer, and one run's gate.

A child asks before it acts (ACP `session/request_permission`, Claude's `can_use_tool`, Codex's
approval requests). Every provider maps its request onto a `PermissionAsk` and answers through a
`PermissionGate`, so the three protocols share one policy language and one safe record:

- `"allow"` / `"reject"`: a fixed answer for every request (`allow` answers `allow_once` when
  offered, else `allow_always`; `reject` the first reject-shaped kind, or `cancelled`);
- a per-kind policy, `{"read": "allow", "search": "allow", "*": "reject"}`: a fixed answer per
  tool kind, `"*"` for every kind not named (a missing `"*"` means reject);
- a `PermissionCallback`: the host decides each request itself.

Nothing is remembered between requests: an `allow_always` answer does not grant the next one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, cast, get_args

from ._deadlines import IdleDeadline
from ._diagnostics import ACP_TOOL_KINDS, PermissionProtocol, permission_line
from ._events import PermissionEvent, SubagentEvent, ToolKind, tool_kind

_log = logging.getLogger("subagent_core")

OptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
"""The kinds of answer a child offers (the ACP option kinds; other protocols map onto them)."""

OPTION_KINDS: Final[tuple[OptionKind, ...]] = get_args(OptionKind)
ALLOW_KINDS: Final[tuple[OptionKind, ...]] = ("allow_once", "allow_always")
REJECT_KINDS: Final[tuple[OptionKind, ...]] = ("reject_once", "reject_always")
REFUSED_DECISIONS: Final = frozenset({"cancelled", "reject_once", "reject_always"})
"""Decisions that refused the child something: their line is kept for the diagnostic."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionAsk:
    """What a permission callback is asked: closed facts, plus child text for a human.

    `title` and `raw_input` are written by the child (untrusted): show them to a person, never
    feed them to a model as instructions or into a diagnostic.
    """

    tool_kind: ToolKind
    """What the child wants to do (the ACP set; anything else is `other`)."""
    option_kinds: tuple[OptionKind, ...]
    """The kinds of the answers offered, in order (unknown kinds left out)."""
    title: str | None
    """Untrusted: the child's description of the action."""
    raw_input: object
    """Untrusted: the child's raw tool input (a JSON value), or `None`."""


PermissionCallback = Callable[[PermissionAsk], Awaitable[str | None]]
"""Asks the host: returns the option kind to answer with, or `None` to answer `cancelled`. A
kind that is not offered, or a callback that raises, also answers `cancelled`."""

KindPolicy = Literal["allow", "reject"]
"""A fixed answer: the one a per-kind policy gives a tool kind."""

PermissionSetting = KindPolicy | Mapping[str, KindPolicy] | PermissionCallback
"""Every provider's `permission` setting: a fixed policy, a per-kind policy, or a callback."""

READS_POLICY: Final[Mapping[str, KindPolicy]] = MappingProxyType(
    {"read": "allow", "search": "allow", "*": "reject"}
)
"""Allow reads and searches, refuse the rest (`harness delegate --approve reads`)."""

_POLICY_KEYS: Final = ACP_TOOL_KINDS | {"*"}


def check_permission(value: object, *, owner: str) -> PermissionSetting:
    """Validates a `permission` setting; a mapping is copied into a read-only one.

    Raises:
        ValueError: `<owner>.permission …` naming what is wrong, never echoing a value.
    """
    if value == "allow" or value == "reject":
        return cast(KindPolicy, value)
    if isinstance(value, Mapping):
        entries = cast(Mapping[object, object], value)
        policy: dict[str, KindPolicy] = {}
        for key, answer in entries.items():
            if not isinstance(key, str) or key not in _POLICY_KEYS:
                raise ValueError(
                    f'{owner}.permission keys must be tool kinds ({", ".join(sorted(ACP_TOOL_KINDS))}) or "*"'
                )
            if answer != "allow" and answer != "reject":
                raise ValueError(f'{owner}.permission values must be "allow" or "reject"')
            policy[key] = cast(KindPolicy, answer)
        return MappingProxyType(policy)
    if not isinstance(value, str) and callable(value):
        return cast(PermissionCallback, value)
    raise ValueError(
        f'{owner}.permission must be "allow", "reject", a mapping of tool kind to "allow"/'
        '"reject", or an async callable'
    )


def fixed_policy(setting: PermissionSetting, kind: ToolKind) -> KindPolicy | None:
    """The fixed answer `setting` gives `kind`, or `None` when a callback decides."""
    if isinstance(setting, str):
        return cast(KindPolicy, setting)
    if isinstance(setting, Mapping):
        policy = cast(Mapping[str, KindPolicy], setting)
        return policy.get(kind, policy.get("*", "reject"))
    return None


class PermissionGate:
    """One run's permission decisions and their safe record.

    `reject_with_option` says how a fixed `reject` answers: with the first reject-shaped kind
    offered (Claude, Codex: an explicit deny), or — when False, or when none is offered — with
    `cancelled` (ACP's outcome for a request the host declines to choose for).

    `idle` is the run's idle deadline once it exists: a host callback may wait on a human for
    longer than the bound, and that silence is the parent's, so the deadline is paused while
    the callback decides.
    """

    def __init__(
        self,
        setting: PermissionSetting,
        protocol: PermissionProtocol,
        publish: Callable[[SubagentEvent], None],
        *,
        reject_with_option: bool = True,
        idle: IdleDeadline | None = None,
    ) -> None:
        self._setting: PermissionSetting = setting
        self._protocol: PermissionProtocol = protocol
        self._publish = publish
        self._reject_with_option = reject_with_option
        self.line: str | None = None
        """The permission line of the latest decision."""
        self.refused: str | None = None
        """The permission line of the latest decision that refused the child something."""
        self.recording = True
        """Cleared when the run settles: later decisions are still made, not recorded."""
        self.idle = idle
        """The run's idle deadline, paused while a host callback decides (set once it exists)."""

    async def decide(
        self,
        kind: object,
        offered: Sequence[str],
        *,
        title: str | None,
        raw_input: object,
    ) -> OptionKind | None:
        """Chooses one of the offered kinds (or `None`: `cancelled`) and records the fact.

        `kind` is the child's tool kind as mapped by the provider (anything outside the closed
        set is `other`); `offered` the kinds of the answers the child offered, in order.
        """
        closed_kind = tool_kind(kind)
        offered_kinds: tuple[OptionKind, ...] = tuple(k for k in offered if k in OPTION_KINDS)
        fixed = fixed_policy(self._setting, closed_kind)
        if fixed is not None:
            policy: Literal["allow", "reject", "ask"] = fixed
            choice = self._fixed_choice(fixed, offered_kinds)
        else:
            policy = "ask"
            choice = await self._ask(closed_kind, offered_kinds, title, raw_input)
        decision = "cancelled" if choice is None else choice
        if self.recording:
            self.line = permission_line(self._protocol, policy, closed_kind, decision)
            if decision in REFUSED_DECISIONS:
                self.refused = self.line
            self._publish(
                PermissionEvent(
                    tool_kind=None if kind is None else closed_kind,
                    policy=policy,
                    decision=decision,
                )
            )
        return choice

    def _fixed_choice(
        self, fixed: KindPolicy, offered: tuple[OptionKind, ...]
    ) -> OptionKind | None:
        if fixed == "allow":
            # A one-time allow before an `allow_always` offered first: a fixed `allow` grants
            # this request only. An agent may turn `allow_always` into a session mode the policy
            # is never asked about again (gemini-cli switches to a privileged approval mode, and
            # refuses the call outright in a folder it does not trust).
            return _first_of(offered, ("allow_once",)) or _first_of(offered, ALLOW_KINDS)
        return _first_of(offered, REJECT_KINDS) if self._reject_with_option else None

    async def _ask(
        self,
        kind: ToolKind,
        offered: tuple[OptionKind, ...],
        title: str | None,
        raw_input: object,
    ) -> OptionKind | None:
        callback = cast(PermissionCallback, self._setting)
        ask = PermissionAsk(tool_kind=kind, option_kinds=offered, title=title, raw_input=raw_input)
        try:
            with nullcontext() if self.idle is None else self.idle.paused():
                picked = cast(object, await callback(ask))  # a host callback may return anything
        except Exception:
            _log.warning("the permission callback raised; answering cancelled", exc_info=True)
            return None
        return next((kind for kind in offered if kind == picked), None)


def _first_of(offered: tuple[OptionKind, ...], kinds: tuple[OptionKind, ...]) -> OptionKind | None:
    for kind in offered:
        if kind in kinds:
            return kind
    return None
