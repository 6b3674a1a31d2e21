"""ACP's permission options on core's provider-neutral `PermissionGate`.

Every decision — a child's `session/request_permission`, and each client file write or
terminal the parent runs for the child — goes through the gate of the turn it happens in
(`subagent_core.kit.Turn.gate`: the policy, the safe record, the idle clock paused while a
host callback decides). ACP offers options as `(option id, option kind)` pairs: the gate picks
a kind and this module selects the first option of that kind. A fixed `reject` answers
`cancelled` (ACP's outcome for a request the host declines), never a reject-shaped option: the
session builds its gates with `reject_with_option=False`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from subagent_core import ToolKind
from subagent_core.kit import ALLOW_KINDS, PermissionGate

Option = tuple[str, str]
"""`(option id, option kind)` as the child offered it."""

GATE_OPTIONS: Final[tuple[Option, ...]] = (("allow", "allow_once"), ("reject", "reject_once"))
"""The choices of a decision the parent makes for its own client services (fs writes,
terminals)."""


async def choose(
    gate: PermissionGate,
    kind: object,
    options: Sequence[Option],
    *,
    title: str | None,
    raw_input: object,
) -> Option | None:
    """Chooses an option (or `None`: `cancelled`); the gate records the fact."""
    picked = await gate.decide(
        kind, [option_kind for _, option_kind in options], title=title, raw_input=raw_input
    )
    if picked is None:
        return None
    return next(option for option in options if option[1] == picked)


async def allows(
    gate: PermissionGate, kind: ToolKind, *, title: str | None, raw_input: object
) -> bool:
    """Decides a client service the parent would run for the child."""
    choice = await choose(gate, kind, GATE_OPTIONS, title=title, raw_input=raw_input)
    return choice is not None and choice[1] in ALLOW_KINDS
