"""`ACPConfig`: how to start an ACP child, checked once at construction.

Every bad value is a `ValueError` naming the key, so a misconfigured provider fails where it is
built, not in the middle of a run. Names and paths here are operator configuration; only
`provider_name` ever reaches diagnostic text, so it is restricted to a safe token.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, cast

PermissionPolicy = Literal["allow", "reject"]

DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
"""Longest line accepted from a child (16 MiB): the ACP SDK itself has no cap."""

DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024
"""Most output text kept per run (8 MiB); the rest is dropped behind a fixed marker."""

DEFAULT_WRITE_TIMEOUT_SECONDS = 10.0
"""How long one write to a child that does not read its stdin may block before the run ends."""

_PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _fail(key: str, requirement: str) -> ValueError:
    return ValueError(f"ACPConfig.{key} {requirement}")


def _no_nul(key: str, value: str) -> None:
    if "\x00" in value:
        raise _fail(key, "must not contain NUL characters")


def _positive_seconds(key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(key, "must be a number of seconds")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise _fail(key, "must be positive and finite")
    return seconds


def enterable_directory(path: Path) -> bool:
    """True when `path` is a directory this process may enter (`X_OK`)."""
    try:
        return path.is_dir() and os.access(path, os.X_OK)
    except OSError:
        return False


def _fspath(value: object) -> object:
    return os.fspath(cast("str | os.PathLike[str]", value))


def _resolve_cwd(value: object) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike):
        raise _fail("cwd", "must be a path or None")
    text = _fspath(cast(object, value))
    if not isinstance(text, str) or text == "":
        raise _fail("cwd", 'must be a non-empty path ("" is not a directory)')
    _no_nul("cwd", text)
    path = Path(text)
    if not path.is_absolute():
        path = Path.cwd() / path
    path = Path(os.path.normpath(path))
    if not enterable_directory(path):
        raise _fail("cwd", "must be an existing directory the process can enter")
    return path


@dataclass(frozen=True, slots=True, kw_only=True)
class ACPConfig:
    """How the ACP provider starts and stops each child.

    Raises:
        ValueError: a value is missing, of the wrong type or out of range; the message names
            the key.
    """

    command: str
    """The executable (argv[0]); never interpreted by a shell."""
    args: Sequence[str] = ()
    """The argv tail; stored as a tuple."""
    provider_name: str = "acp"
    """Registry name and the `provider:` field of diagnostics (letters, digits, `._-`)."""
    cwd: Path | None = None
    """The child's cwd and its `session/new` cwd; relative paths are resolved at construction.
    `None` uses each request's (absolute) cwd."""
    permission: PermissionPolicy = "reject"
    """`allow` selects the first allow-shaped option of a permission request; `reject` (and
    `allow` without such an option) answers `cancelled`."""
    env: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))
    """Explicit child environment laid over the scrubbed parent environment; `None` removes an
    inherited name. Credentials and ambient `DSH_*` values reach the child only through here."""
    dispose_eof_grace_seconds: float = 6.0
    """After stdin EOF, before SIGTERM to the tree."""
    dispose_grace_seconds: float = 3.0
    """After SIGTERM, before SIGKILL to the tree."""
    dispose_kill_grace_seconds: float = 3.0
    """After SIGKILL, before reporting the tree not gone."""
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    """Longest accepted line from the child; a longer one ends the run as `transport`."""
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    """Most output text (UTF-8 bytes) a run keeps; the rest is cut behind a fixed marker."""
    write_timeout_seconds: float = DEFAULT_WRITE_TIMEOUT_SECONDS
    """Bound on one write to the child; a write blocked longer ends the run as `transport`."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "provider_name", _check_provider_name(self.provider_name))
        set_(self, "command", _check_command(self.command))
        set_(self, "args", _check_args(self.args))
        set_(self, "cwd", _resolve_cwd(self.cwd))
        set_(self, "permission", _check_permission(self.permission))
        set_(self, "env", MappingProxyType(_check_env(self.env)))
        for key in (
            "dispose_eof_grace_seconds",
            "dispose_grace_seconds",
            "dispose_kill_grace_seconds",
            "write_timeout_seconds",
        ):
            set_(self, key, _positive_seconds(key, getattr(self, key)))
        set_(self, "max_frame_bytes", _positive_int("max_frame_bytes", self.max_frame_bytes))
        set_(self, "max_output_bytes", _positive_int("max_output_bytes", self.max_output_bytes))

    @property
    def argv(self) -> list[str]:
        """The child's full argv."""
        return [self.command, *self.args]


def _check_provider_name(name: object) -> str:
    if not isinstance(name, str) or _PROVIDER_NAME.fullmatch(name) is None:
        raise _fail(
            "provider_name", "must be 1-64 letters, digits, '.', '_' or '-', starting alnum"
        )
    return name


def _check_command(command: object) -> str:
    if not isinstance(command, str) or command == "":
        raise _fail("command", "must be a non-empty string")
    _no_nul("command", command)
    return command


def _check_args(args: object) -> tuple[str, ...]:
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise _fail("args", "must be a sequence of strings")
    checked: list[str] = []
    for item in cast("Sequence[object]", args):
        if not isinstance(item, str):
            raise _fail("args", "must contain only strings")
        _no_nul("args", item)
        checked.append(item)
    return tuple(checked)


def _check_permission(permission: object) -> PermissionPolicy:
    if permission == "allow":
        return "allow"
    if permission == "reject":
        return "reject"
    raise _fail("permission", 'must be "allow" or "reject"')


def _positive_int(key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _fail(key, "must be a positive int")
    return value


def _check_env(env: object) -> dict[str, str | None]:
    if not isinstance(env, Mapping):
        raise _fail("env", "must be a mapping of names to strings or None")
    checked: dict[str, str | None] = {}
    for name, value in cast("Mapping[object, object]", env).items():
        if not isinstance(name, str) or name == "" or "=" in name or "\x00" in name:
            raise _fail("env", "names must be non-empty strings without '=' or NUL")
        if value is not None and (not isinstance(value, str) or "\x00" in value):
            raise _fail("env", "values must be strings without NUL, or None")
        checked[name] = value
    return checked
