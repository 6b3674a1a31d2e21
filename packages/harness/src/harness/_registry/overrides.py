"""Command-line choices that replace a provider's configured permission and deadlines.

`harness delegate --approve reads|all|none` maps onto every child-process provider's
`permission` setting (`reads` is subagent-core's `READS_POLICY`: reads and searches allowed,
the rest refused); `--startup-timeout` / `--idle-timeout` replace its
`startup_timeout_seconds` / `idle_timeout_seconds`. They are applied to the built config object
(`dataclasses.replace`, so the provider's own validation runs again), and only where that config
has the field: a provider that cannot honour a choice is a usage error, never a silent no-op.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

from subagent_core import READS_POLICY, PermissionSetting

from harness._console.exit_codes import UsageError

ApproveChoice = Literal["reads", "all", "none"]

APPROVE_POLICIES: dict[str, PermissionSetting] = {
    "reads": READS_POLICY,
    "all": "allow",
    "none": "reject",
}
"""What each `--approve` choice sets as the provider's `permission`."""

_C = TypeVar("_C")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderOverrides:
    """Replacements for a child-process provider's config fields (None: keep the configured)."""

    approve: ApproveChoice | None = None
    startup_timeout_seconds: float | None = None
    idle_timeout_seconds: float | None = None

    @property
    def any(self) -> bool:
        return (self.approve, self.startup_timeout_seconds, self.idle_timeout_seconds) != (
            None,
            None,
            None,
        )

    def apply(self, config: _C, *, provider: str) -> _C:
        """`config` (an ACP or SDK config dataclass) with the overrides applied.

        Raises:
            UsageError: the config has no such field, or rejects the value.
        """
        changes: dict[str, Any] = {}
        if self.approve is not None:
            changes["permission"] = APPROVE_POLICIES[self.approve]
        if self.startup_timeout_seconds is not None:
            changes["startup_timeout_seconds"] = self.startup_timeout_seconds
        if self.idle_timeout_seconds is not None:
            changes["idle_timeout_seconds"] = self.idle_timeout_seconds
        if not changes:
            return config
        fields = {item.name for item in dataclasses.fields(cast(Any, config))}
        for name in changes:
            if name not in fields:
                raise UsageError(f'{_FLAGS[name]}: provider "{provider}" has no {name} setting')
        try:
            return cast(_C, dataclasses.replace(cast(Any, config), **changes))
        except ValueError as error:
            raise UsageError(f"providers.{provider}: {error}") from None

    def refuse_for(self, provider: str, kind: str) -> None:
        """Raises for a provider without a child process (`model`): nothing to apply to.

        Raises:
            UsageError: any override was given.
        """
        if self.any:
            raise UsageError(
                "--approve, --startup-timeout and --idle-timeout apply to providers with a "
                f'child process (acp, sdk, claude, codex); "{provider}" is {kind}'
            )


_FLAGS = {
    "permission": "--approve",
    "startup_timeout_seconds": "--startup-timeout",
    "idle_timeout_seconds": "--idle-timeout",
}
