"""What every child provider's config shares, written once.

Each provider's config is a frozen dataclass checked at construction, and most of its fields
mean the same thing in every provider: the registry name, the child's command, the permission
setting, the ladder's graces, the deadlines, the byte bounds, what becomes of the child's
stderr. `ChildBounds` declares the bounds once (a provider's config subclasses it), and
`check_child_config` checks and normalises the shared fields in place (naming `<Owner>.<key>`
in every error, as users see them today), so a config's own `__post_init__` keeps only the
fields that are its provider's. `ChildSession.configured` builds the lifecycle from such a
config and `ChildProvider` (`_child_provider`) is the registry face over it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

from ._bounded_text import DEFAULT_MAX_OUTPUT_BYTES
from ._command import ChildCommand
from ._deadlines import (
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    DEFAULT_STARTUP_TIMEOUT_SECONDS,
    check_timeout,
)
from ._framing import DEFAULT_MAX_FRAME_BYTES
from ._permission import PermissionSetting, check_permission
from ._placement import Placement
from ._stderr_log import ChildStderr
from ._teardown import Teardown
from ._warm_pool import MAX_PREWARM
from ._workspace import enterable_directory

_PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

DEFAULT_WRITE_TIMEOUT_SECONDS = 10.0
"""How long one write to a child that does not read its stdin may block before the run ends."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildBounds:
    """The bounds every child provider's config has, declared once: the ladder's graces, the
    startup and idle deadlines, the longest line, the kept output and the write bound.

    A provider's config subclasses it (frozen, slotted, keyword-only, as this is) and checks
    these fields with `check_child_config`; what a bound means for its protocol (the stage a
    deadline fails at, whether the child exits on EOF) is written in the config's own doc.
    """

    dispose_eof_grace_seconds: float = 0.5
    """After stdin EOF, before SIGTERM to the tree (a cooperative child exits on EOF within
    milliseconds; a long grace only delays disposing a run whose answer is in hand)."""
    dispose_grace_seconds: float = 0.5
    """After SIGTERM, before SIGKILL to the tree; a settled run has no work left to flush."""
    dispose_kill_grace_seconds: float = 3.0
    """After SIGKILL, before reporting the tree not gone."""
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    """Longest accepted line from the child; a longer one ends the run as `transport`."""
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    """Most output text (UTF-8 bytes) a run keeps; the rest is cut behind a fixed marker."""
    write_timeout_seconds: float = DEFAULT_WRITE_TIMEOUT_SECONDS
    """Bound on one write to the child; a write blocked longer ends the run as `transport`."""
    startup_timeout_seconds: float | None = DEFAULT_STARTUP_TIMEOUT_SECONDS
    """Spawn to publication (the handshake); on expiry the tree is rolled back and the start
    fails with `category: timeout` at the stage it reached. `None` disables it."""
    idle_timeout_seconds: float | None = DEFAULT_IDLE_TIMEOUT_SECONDS
    """After publication, the longest time without a single line from the child; on expiry
    the turn is interrupted and ends `error` + `category: timeout`, output so far kept. `None`
    disables it."""

    @property
    def teardown(self) -> Teardown:
        """The three graces of the ladder as one value."""
        return teardown_of(self)


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


def check_child_config(
    config: object,
    owner: str,
    *,
    default_command: str | None = None,
    existing_cwd: bool = True,
    seconds: Iterable[str] = (),
) -> None:
    """Checks and normalises, in place, the shared fields `config` has.

    `provider_name`, then the command (`command`, `args`, `env`, `cwd`, `remote`: the rules of
    `ChildCommand`, and a configured cwd must be a directory this process can enter unless
    `existing_cwd` is false), `permission`, the three graces (`Teardown.checked`),
    `write_timeout_seconds` and the fields named in `seconds` (positive, finite), the startup
    and idle deadlines, `max_frame_bytes` and `max_output_bytes`, `child_stderr`,
    `otel_passthrough` (a bool), `prewarm` (up to `MAX_PREWARM` warm children). A field the config does not have is skipped. A
    command left `None` (found at each start) is checked as `default_command`, when given,
    and stays `None`.

    Raises:
        ValueError: a value is missing, of the wrong type or out of range; `<owner>.<key> …`.
    """
    check = _Checker(config, owner)
    check.set("provider_name", check_provider_name(owner, check.get("provider_name")))
    if check.has("command"):
        found_later = default_command is not None and check.get("command") is None
        command = checked_command(config, owner, command=default_command if found_later else None)
        if existing_cwd and command.cwd is not None and not enterable_directory(command.cwd):
            raise check.fail("cwd", "must be an existing directory the process can enter")
        if not found_later:
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
    for key in ("write_timeout_seconds", *seconds):
        if check.has(key):
            check.seconds(key)
    for key in ("startup_timeout_seconds", "idle_timeout_seconds"):
        check.set(key, check_timeout(check.get(key), owner=owner, name=key))
    for key in ("max_frame_bytes", "max_output_bytes"):
        if check.has(key):
            check.positive_int(key)
    if check.has("child_stderr") and not isinstance(check.get("child_stderr"), ChildStderr):
        raise check.fail("child_stderr", "must be a subagent_core.kit.ChildStderr")
    if check.has("otel_passthrough") and not isinstance(check.get("otel_passthrough"), bool):
        raise check.fail("otel_passthrough", "must be True or False")
    prewarm = check.get("prewarm") if check.has("prewarm") else 0
    if isinstance(prewarm, bool) or not isinstance(prewarm, int) or not 0 <= prewarm <= MAX_PREWARM:
        raise check.fail("prewarm", f"must be an int from 0 to {MAX_PREWARM}")


def checked_command(config: object, owner: str, *, command: str | None = None) -> ChildCommand:
    """The config's command fields as a `ChildCommand` (with `command` in place of the
    config's, when given: a command the provider finds at each start).

    Raises:
        ValueError: `<owner>.<field> …`, when a field breaks `ChildCommand`'s rules.
    """
    fields = {key: getattr(config, key) for key in ("command", "args", "env", "cwd", "remote")}
    if command is not None:
        fields["command"] = command
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


class GraceFields(Protocol):
    """The three grace fields of a config (read-only)."""

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


class ChildConfigFields(GraceFields, Protocol):
    """The shared fields a child provider's config has (read-only)."""

    @property
    def provider_name(self) -> str:
        """The registry name."""
        raise NotImplementedError

    @property
    def cwd(self) -> Path | str | None:
        """The child's configured cwd (`None`: each request's)."""
        raise NotImplementedError

    @property
    def remote(self) -> Placement | None:
        """Where the child runs (`None`: this host)."""
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


def teardown_of(config: GraceFields) -> Teardown:
    """A config's three graces as one value."""
    return Teardown(
        config.dispose_eof_grace_seconds,
        config.dispose_grace_seconds,
        config.dispose_kill_grace_seconds,
    )
