"""`ChildCommand`: one frozen description of a child to start, validated once.

Every provider's config and the managed-process spawner share it, so the same command, argv,
environment and cwd are accepted or refused by the same rules everywhere. Values may come from
a config file, so every check works on `object`. Each `ValueError` message starts with the
field name and never echoes the value, so a config built on top can prefix its own class name
(`f"ACPConfig.{error}"`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import cast

from ._environment import child_env
from ._placement import Placement
from ._remote import SSHRemote


def _no_env() -> Mapping[str, str | None]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildCommand:
    """A program to start: argv, explicit environment and working directory.

    Raises:
        ValueError: a field is of the wrong type or holds a value no OS accepts (NUL bytes,
            `=` in an environment name); the message names the field.
    """

    command: str
    """The executable (argv[0]); never interpreted by a shell. Non-empty, no NUL."""
    args: tuple[str, ...] = ()
    """The argv tail; any sequence of strings is accepted and stored as a tuple. No NUL."""
    env: Mapping[str, str | None] = field(default_factory=_no_env, repr=False)
    """Explicit variables laid over the scrubbed inherited environment (see `child_env`):
    a value always wins, `None` removes an inherited name. Names are non-empty, without `=`
    or NUL; values have no NUL. Stored read-only; left out of `repr` (it may hold a key)."""
    cwd: Path | None = None
    """The child's working directory, made absolute at construction; `None` inherits the
    parent's. Whether it exists is checked when the child is spawned."""
    remote: Placement | None = None
    """Where the command runs (`None`: this host). A placement such as `SSHRemote` opens it
    elsewhere under a guard; then `env` and `cwd` apply where it runs, and env names must be
    ones the placement can carry (`Placement.check_env`; shell identifiers for ssh)."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "command", _check_command(cast(object, self.command)))
        set_(self, "args", _check_args(cast(object, self.args)))
        set_(self, "env", MappingProxyType(_check_env(cast(object, self.env))))
        set_(self, "cwd", _check_cwd(cast(object, self.cwd)))
        if self.remote is not None:
            if not isinstance(cast(object, self.remote), Placement):
                raise ValueError("remote must be a Placement (such as an SSHRemote) or None")
            self.remote.check_env(self.env)

    @property
    def argv(self) -> tuple[str, ...]:
        """The full argv: `command` followed by `args`."""
        return (self.command, *self.args)

    def environment(self, parent: Mapping[str, str] | None = None) -> dict[str, str]:
        """The child's whole environment: `parent` (default `os.environ`) scrubbed, then `env`."""
        return child_env(self.env, parent)

    def local_command(self) -> ChildCommand:
        """What this host spawns: the command itself, or the `ssh` client running it remotely.

        The ssh client gets the scrubbed local environment (no explicit `env`: that travels
        in the remote command line) and this process's cwd. Other placements have no local
        command (`ValueError`): open them with `open_managed_process`.
        """
        if self.remote is None:
            return self
        if not isinstance(self.remote, SSHRemote):
            raise ValueError("remote has no local command; open it with open_managed_process")
        argv = self.remote.ssh_argv(self.argv, env=self.env, cwd=self.cwd)
        return ChildCommand(command=argv[0], args=argv[1:])

    def local_eof_grace(self, seconds: float) -> float:
        """The EOF grace to use locally: `seconds`, raised for a remote command so that the
        remote guard's ladder ends before `ssh` is signalled (`SSHRemote.local_eof_grace_seconds`).
        """
        if not isinstance(self.remote, SSHRemote):
            return seconds
        return max(seconds, self.remote.local_eof_grace_seconds)


def _has_nul(text: str) -> bool:
    return "\x00" in text


def _check_command(command: object) -> str:
    if not isinstance(command, str) or command == "" or _has_nul(command):
        raise ValueError("command must be a non-empty string without NUL")
    return command


def _check_args(args: object) -> tuple[str, ...]:
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise ValueError("args must be a sequence of strings without NUL")
    items = tuple(cast("Sequence[object]", args))
    for item in items:
        if not isinstance(item, str) or _has_nul(item):
            raise ValueError("args must be a sequence of strings without NUL")
    return cast("tuple[str, ...]", items)


def _check_env(env: object) -> dict[str, str | None]:
    if not isinstance(env, Mapping):
        raise ValueError("env must be a mapping of names to strings or None")
    checked: dict[str, str | None] = {}
    for name, value in cast("Mapping[object, object]", env).items():
        if not isinstance(name, str) or name == "" or "=" in name or _has_nul(name):
            raise ValueError("env names must be non-empty strings without '=' or NUL")
        if value is not None and (not isinstance(value, str) or _has_nul(value)):
            raise ValueError("env values must be strings without NUL, or None")
        checked[name] = value
    return checked


def _check_cwd(cwd: object) -> Path | None:
    if cwd is None:
        return None
    if not isinstance(cwd, str | os.PathLike):
        raise ValueError("cwd must be a non-empty path without NUL, or None")
    text = os.fspath(cast("str | os.PathLike[str]", cwd))
    if not isinstance(text, str) or text == "" or _has_nul(text):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError("cwd must be a non-empty path without NUL, or None")
    return Path(os.path.normpath(Path(text).absolute()))
