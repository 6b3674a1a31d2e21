"""What every child provider's config and registry face share, written once.

Each provider's config is a frozen dataclass checked at construction, and most of its fields
mean the same thing in every provider: the registry name, the child's command, the permission
setting, the ladder's graces, the deadlines, the byte bounds, what becomes of the child's
stderr. `check_child_config` checks and normalises those fields in place (naming
`<Owner>.<key>` in every error, as users see them today), so a config's own `__post_init__`
keeps only the fields that are its provider's. `ChildProvider` is the registry face every
provider over `ChildSession` has (name, config, no parent context, nothing to close), and
`ChildSession.configured` builds the lifecycle from such a config.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Generic, Protocol, TypeVar, cast

from ._closing import AsyncClosing
from ._command import ChildCommand
from ._deadlines import check_timeout
from ._permission import PermissionSetting, check_permission
from ._stderr_log import ChildStderr
from ._teardown import Teardown
from ._workspace import enterable_directory

_PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class _Checker:
    """Checks one frozen config's fields, failing as `<owner>.<key> <requirement>`."""

    def __init__(self, config: object, owner: str) -> None:
        self._config = config
        self._owner = owner

    def fail(self, key: str, requirement: str) -> ValueError:
        return ValueError(f"{self._owner}.{key} {requirement}")

    def has(self, key: str) -> bool:
        return hasattr(self._config, key)

    def get(self, key: str) -> object:
        return cast(object, getattr(self._config, key))

    def set(self, key: str, value: object) -> None:
        object.__setattr__(self._config, key, value)

    def seconds(self, key: str) -> None:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, "must be a number of seconds")
        if not math.isfinite(value) or value <= 0:
            raise self.fail(key, "must be positive and finite")
        self.set(key, float(value))

    def positive_int(self, key: str) -> None:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.fail(key, "must be a positive int")


def check_provider_name(owner: str, name: object) -> str:
    """A registry name: 1-64 letters, digits, `.`, `_` or `-`, starting with a letter or digit
    (it is the one configured text that reaches a diagnostic).

    Raises:
        ValueError: `<owner>.provider_name must be …`.
    """
    if not isinstance(name, str) or _PROVIDER_NAME.fullmatch(name) is None:
        raise ValueError(
            f"{owner}.provider_name must be 1-64 letters, digits, '.', '_' or '-', starting alnum"
        )
    return name


def check_child_config(config: object, owner: str) -> None:
    """Checks and normalises, in place, the shared fields `config` has.

    `provider_name`, then the command (`command`, `args`, `env`, `cwd`, `remote`: the rules of
    `ChildCommand`, and a configured cwd must be a directory this process can enter),
    `permission`, the three graces (`Teardown.checked`), `write_timeout_seconds`, the startup
    and idle deadlines, `max_frame_bytes` and `max_output_bytes`, `child_stderr`. A field the
    config does not have is skipped.

    Raises:
        ValueError: a value is missing, of the wrong type or out of range; `<owner>.<key> …`.
    """
    check = _Checker(config, owner)
    check.set("provider_name", check_provider_name(owner, check.get("provider_name")))
    if check.has("command"):
        command = checked_command(config, owner)
        if command.cwd is not None and not enterable_directory(command.cwd):
            raise check.fail("cwd", "must be an existing directory the process can enter")
        check.set("command", command.command)
        check.set("args", command.args)
        check.set("env", command.env)
        check.set("cwd", command.cwd)
    if check.has("permission"):
        check.set("permission", check_permission(check.get("permission"), owner=owner))
    teardown = Teardown.checked(
        owner,
        check.get("dispose_eof_grace_seconds"),
        check.get("dispose_grace_seconds"),
        check.get("dispose_kill_grace_seconds"),
    )
    check.set("dispose_eof_grace_seconds", teardown.eof_grace_seconds)
    check.set("dispose_grace_seconds", teardown.term_grace_seconds)
    check.set("dispose_kill_grace_seconds", teardown.kill_grace_seconds)
    if check.has("write_timeout_seconds"):
        check.seconds("write_timeout_seconds")
    for key in ("startup_timeout_seconds", "idle_timeout_seconds"):
        check.set(key, check_timeout(check.get(key), owner=owner, name=key))
    for key in ("max_frame_bytes", "max_output_bytes"):
        if check.has(key):
            check.positive_int(key)
    if check.has("child_stderr") and not isinstance(check.get("child_stderr"), ChildStderr):
        raise check.fail("child_stderr", "must be a subagent_core.kit.ChildStderr")


def checked_command(config: object, owner: str) -> ChildCommand:
    """The config's command fields as a `ChildCommand`.

    Raises:
        ValueError: `<owner>.<field> …`, when a field breaks `ChildCommand`'s rules.
    """
    fields = {key: getattr(config, key) for key in ("command", "args", "env", "cwd", "remote")}
    try:
        return ChildCommand(
            command=fields["command"],
            args=fields["args"],
            env=fields["env"],
            cwd=cast("Path | None", fields["cwd"]),
            remote=fields["remote"],
        )
    except ValueError as error:
        raise ValueError(f"{owner}.{error}") from None


class ChildConfigFields(Protocol):
    """The shared fields a child provider's config has (read-only)."""

    @property
    def provider_name(self) -> str:
        """The registry name."""
        raise NotImplementedError

    @property
    def dispose_eof_grace_seconds(self) -> float:
        """The ladder's EOF grace."""
        raise NotImplementedError

    @property
    def dispose_grace_seconds(self) -> float:
        """The ladder's TERM grace."""
        raise NotImplementedError

    @property
    def dispose_kill_grace_seconds(self) -> float:
        """The ladder's KILL grace."""
        raise NotImplementedError

    @property
    def startup_timeout_seconds(self) -> float | None:
        """Spawn to publication."""
        raise NotImplementedError

    @property
    def idle_timeout_seconds(self) -> float | None:
        """The longest silence of a turn."""
        raise NotImplementedError


class GatedConfigFields(ChildConfigFields, Protocol):
    """A config whose provider asks the parent before the child acts (a permission setting)."""

    @property
    def permission(self) -> PermissionSetting:
        """How the child's permission requests are answered."""
        raise NotImplementedError


def teardown_of(config: ChildConfigFields) -> Teardown:
    """A config's three graces as one value."""
    return Teardown(
        config.dispose_eof_grace_seconds,
        config.dispose_grace_seconds,
        config.dispose_kill_grace_seconds,
    )


ConfigT = TypeVar("ConfigT", bound=ChildConfigFields)


class ChildProvider(AsyncClosing, Generic[ConfigT]):
    """The registry face of a provider over `ChildSession`: a config and its name.

    Its children never see the parent's conversation (only the prompt and their workspace),
    and it holds nothing beyond its runs (a provider with a warm pool overrides `aclose`).
    Subclasses give `capabilities` and `start` (and, for sessions, `open_session` and
    `resume_session`).
    """

    def __init__(self, config: ConfigT) -> None:
        self._config = config

    @property
    def config(self) -> ConfigT:
        """The configuration this provider was built with."""
        return self._config

    @property
    def name(self) -> str:
        """The registry name (the config's `provider_name`)."""
        return self._config.provider_name

    @property
    def inherits_parent_context(self) -> bool:
        """Always False: the child sees the prompt and its workspace only."""
        return False

    async def aclose(self) -> None:
        """Nothing to release: every child belongs to its run."""
