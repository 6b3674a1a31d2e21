"""ACP permission requests answered through core's provider-neutral `PermissionGate`.

Every decision — a child's `session/request_permission`, and each client file write or
terminal the parent runs for the child — goes through one `Permissions` object per run. ACP
offers options as `(option id, option kind)` pairs: the gate picks a kind and this adapter
selects the first option of that kind. A fixed `reject` answers `cancelled` (ACP's outcome for
a request the host declines), never a reject-shaped option.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from subagent_core import PermissionSetting, SubagentEvent, ToolKind
from subagent_core.kit import ALLOW_KINDS, IdleDeadline, PermissionGate

Option = tuple[str, str]
"""`(option id, option kind)` as the child offered it."""

GATE_OPTIONS: Final[tuple[Option, ...]] = (("allow", "allow_once"), ("reject", "reject_once"))
"""The choices of a decision the parent makes for its own client services (fs writes,
terminals)."""


class Permissions:
    """One run's permission decisions and their safe record (`ACP permission (…)` lines)."""

    def __init__(
        self, setting: PermissionSetting, publish: Callable[[SubagentEvent], None]
    ) -> None:
        self._gate = PermissionGate(setting, "ACP", publish, reject_with_option=False)

    @property
    def line(self) -> str | None:
        """The permission line of the latest decision."""
        return self._gate.line

    @property
    def refused(self) -> str | None:
        """The permission line of the latest decision that refused the child something."""
        return self._gate.refused

    @property
    def idle(self) -> IdleDeadline | None:
        """The run's idle deadline, paused while a host callback decides."""
        return self._gate.idle

    @idle.setter
    def idle(self, idle: IdleDeadline | None) -> None:
        self._gate.idle = idle

    def stop_recording(self) -> None:
        """The run settled: later decisions are still made, not recorded."""
        self._gate.recording = False

    async def decide(
        self,
        kind: object,
        options: Sequence[Option],
        *,
        title: str | None,
        raw_input: object,
    ) -> Option | None:
        """Chooses an option (or `None`: `cancelled`) and records the fact."""
        picked = await self._gate.decide(
            kind, [option_kind for _, option_kind in options], title=title, raw_input=raw_input
        )
        if picked is None:
            return None
        return next(option for option in options if option[1] == picked)

    async def allows(self, kind: ToolKind, *, title: str | None, raw_input: object) -> bool:
        """Decides a client service the parent would run for the child."""
        choice = await self.decide(kind, GATE_OPTIONS, title=title, raw_input=raw_input)
        return choice is not None and choice[1] in ALLOW_KINDS
