"""`ACPConfig`: how to start an ACP child, checked once at construction.

Every bad value is a `ValueError` naming the key, so a misconfigured provider fails where it is
built, not in the middle of a run. The command fields (`command`, `args`, `env`, `cwd`) are
validated by `subagent_core.kit.ChildCommand`, the rules every provider shares. Names and paths here are operator configuration; only
`provider_name` ever reaches diagnostic text, so it is restricted to a safe token.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, cast

from subagent_core import PermissionSetting, Placement
from subagent_core.kit import (
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_STARTUP_TIMEOUT_SECONDS,
    ChildCommand,
    ChildStderr,
    Teardown,
    check_permission,
    check_timeout,
    enterable_directory,
)

FileSystemMode = Literal["none", "read", "read-write"]
"""How much of the workspace the child may use through the parent's client file system."""

DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
"""Longest line accepted from a child (16 MiB): the ACP SDK itself has no cap."""

MAX_PREWARM = 64
"""Most pre-spawned children a provider keeps."""

DEFAULT_WRITE_TIMEOUT_SECONDS = 10.0
"""How long one write to a child that does not read its stdin may block before the run ends."""

_PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _fail(key: str, requirement: str) -> ValueError:
    return ValueError(f"ACPConfig.{key} {requirement}")


def _positive_seconds(key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(key, "must be a number of seconds")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise _fail(key, "must be positive and finite")
    return seconds


def _child_command(config: ACPConfig) -> ChildCommand:
    """Validates the command fields by the rules every provider shares."""
    try:
        return ChildCommand(
            command=config.command,
            args=cast("tuple[str, ...]", config.args),
            env=config.env,
            cwd=config.cwd,
            remote=config.remote,
        )
    except ValueError as error:
        raise ValueError(f"ACPConfig.{error}") from None


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
    permission: PermissionSetting = "reject"
    """`allow` selects the first allow-shaped option of a permission request; `reject` (and
    `allow` without such an option) answers `cancelled`. A mapping from tool kind to `allow` /
    `reject` with a `"*"` default decides per kind (`subagent_core.READS_POLICY` allows reads
    and searches only). An async callable
    `(PermissionAsk) -> str | None` asks the host instead: it returns the option kind to select
    or `None` (`cancelled`). The same decision gates client file writes and terminals."""
    fs: FileSystemMode = "none"
    """Client file system offered to the child: `read` answers `fs/read_text_file`,
    `read-write` also `fs/write_text_file` (only for requests with `allow_writes`, and each
    write through `permission`). Paths are confined to the run's workspace."""
    terminal: bool = False
    """Offer client terminals (`terminal/*`): commands run as managed processes of the run,
    each gated by `permission`, cwd confined to the workspace, all ended with the run."""
    mode: str | None = None
    """A session mode to select after `session/new` (`session/set_mode`, or a `mode` config
    option); a child that does not offer it fails the start with a configuration fact."""
    model: str | None = None
    """A model to select after `session/new` (the child's `model` config option); a child that
    does not offer it fails the start with a configuration fact."""
    env: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))
    """Explicit child environment laid over the scrubbed parent environment; `None` removes an
    inherited name. Credentials and ambient `DSH_*` values reach the child only through here."""
    dispose_eof_grace_seconds: float = 0.5
    """After stdin EOF, before SIGTERM to the tree. A cooperative child exits on EOF within
    milliseconds, while real agents (claude-agent-acp, codex-acp) ignore EOF entirely: a long
    grace only delays disposing a run whose answer is already in hand."""
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
    """Spawn to publication (a warm child: its `initialize`, then claim to publication); on
    expiry the tree is rolled back and the start fails with `category: timeout` at the handshake
    stage it reached. `None` disables it."""
    idle_timeout_seconds: float | None = DEFAULT_IDLE_TIMEOUT_SECONDS
    """After publication, the longest time without a single line from the child; on expiry the
    run sends `session/cancel` and ends `error` + `stage: prompt; category: timeout`, output so
    far kept. `None` disables it."""
    prewarm: int = 0
    """Children kept spawned and past `initialize` (0 to `MAX_PREWARM`), each used for exactly
    one run and replaced in the background; `ACPProvider.aclose()` ends them."""
    remote: Placement | None = None
    """Where each child runs (`None`: this host): a `Placement` such as `SSHRemote` (another host
    through `ssh`) or `subagent_ray.RayPlacement`, under its containment guard; `command`, `env`
    and the workspace path then apply there (`fs`/`terminal` act on this host)."""
    child_stderr: ChildStderr = field(default_factory=ChildStderr)
    """What becomes of each child's stderr (`subagent_core.kit.ChildStderr`): always drained,
    into a bounded log file per child under `log_dir`, or dropped (the default); `live=True`
    also copies it to this process's stderr, for a person at a terminal. Never inherited: it
    is the child's text (its logs, session ids, whatever it printed)."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "provider_name", _check_provider_name(self.provider_name))
        command = _child_command(self)
        if command.cwd is not None and not enterable_directory(command.cwd):
            raise _fail("cwd", "must be an existing directory the process can enter")
        set_(self, "command", command.command)
        set_(self, "args", command.args)
        set_(self, "env", command.env)
        set_(self, "cwd", command.cwd)
        set_(self, "permission", check_permission(self.permission, owner="ACPConfig"))
        set_(self, "fs", _check_fs(self.fs))
        prewarm = cast(object, self.prewarm)
        if (
            isinstance(prewarm, bool)
            or not isinstance(prewarm, int)
            or not 0 <= prewarm <= MAX_PREWARM
        ):
            raise _fail("prewarm", f"must be an int from 0 to {MAX_PREWARM}")
        if not isinstance(self.terminal, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _fail("terminal", "must be True or False")
        for key in ("mode", "model"):
            value: object = getattr(self, key)
            if value is not None and (not isinstance(value, str) or value == ""):
                raise _fail(key, "must be a non-empty string or None")
        teardown = Teardown.checked(
            "ACPConfig",
            self.dispose_eof_grace_seconds,
            self.dispose_grace_seconds,
            self.dispose_kill_grace_seconds,
        )
        set_(self, "dispose_eof_grace_seconds", teardown.eof_grace_seconds)
        set_(self, "dispose_grace_seconds", teardown.term_grace_seconds)
        set_(self, "dispose_kill_grace_seconds", teardown.kill_grace_seconds)
        set_(
            self,
            "write_timeout_seconds",
            _positive_seconds("write_timeout_seconds", self.write_timeout_seconds),
        )
        for key in ("startup_timeout_seconds", "idle_timeout_seconds"):
            set_(self, key, check_timeout(getattr(self, key), owner="ACPConfig", name=key))
        set_(self, "max_frame_bytes", _positive_int("max_frame_bytes", self.max_frame_bytes))
        set_(self, "max_output_bytes", _positive_int("max_output_bytes", self.max_output_bytes))
        if not isinstance(cast(object, self.child_stderr), ChildStderr):
            raise _fail("child_stderr", "must be a subagent_core.kit.ChildStderr")

    @property
    def argv(self) -> list[str]:
        """The child's full argv."""
        return [self.command, *self.args]

    @property
    def teardown(self) -> Teardown:
        """The three graces of the ladder as one value."""
        return Teardown(
            self.dispose_eof_grace_seconds,
            self.dispose_grace_seconds,
            self.dispose_kill_grace_seconds,
        )

    def child_command(self, cwd: Path) -> ChildCommand:
        """The child's command for `cwd` (already checked); with `remote`, `open_managed_process`
        spawns the `ssh` client that runs it there."""
        return ChildCommand(
            command=self.command, args=tuple(self.args), env=self.env, cwd=cwd, remote=self.remote
        )


def _check_provider_name(name: object) -> str:
    if not isinstance(name, str) or _PROVIDER_NAME.fullmatch(name) is None:
        raise _fail(
            "provider_name", "must be 1-64 letters, digits, '.', '_' or '-', starting alnum"
        )
    return name


def _check_fs(fs: object) -> FileSystemMode:
    if fs == "none":
        return "none"
    if fs == "read":
        return "read"
    if fs == "read-write":
        return "read-write"
    raise _fail("fs", 'must be "none", "read" or "read-write"')


def _positive_int(key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _fail(key, "must be a positive int")
    return value
