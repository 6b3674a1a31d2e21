"""`ACPConfig`: how to start an ACP child, checked once at construction.

Every bad value is a `ValueError` naming the key, so a misconfigured provider fails where it is
built, not in the middle of a run. The command fields (`command`, `args`, `env`, `cwd`) are
validated by `subagent_core.kit.ChildCommand`, the rules every provider shares. Names and paths here are operator configuration; only
`provider_name` ever reaches diagnostic text, so it is restricted to a safe token.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from subagent_core import PermissionSetting, Placement
from subagent_core.kit import (
    ChildBounds,
    ChildCommand,
    ChildStderr,
    check_child_config,
    otel_env,
)

FileSystemMode = Literal["none", "read", "read-write"]
"""How much of the workspace the child may use through the parent's client file system."""


def _fail(key: str, requirement: str) -> ValueError:
    return ValueError(f"ACPConfig.{key} {requirement}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ACPConfig(ChildBounds):
    """How the ACP provider starts and stops each child.

    The bounds are `ChildBounds`' (the longest line is the only cap: the ACP SDK itself has
    none). The startup deadline covers a warm child's `initialize`, then claim to publication;
    the idle deadline sends `session/cancel` and ends the run `error` + `stage: prompt;
    category: timeout`. The EOF grace is short: a cooperative child exits on EOF within
    milliseconds, while real agents (claude-agent-acp, codex-acp) ignore EOF entirely.

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
    otel_passthrough: bool = False
    """Pass this process's `OTEL_*` variables to the child (`subagent_core.kit.otel_env`), so
    an agent with an OpenTelemetry exporter of its own sends where this process does; the OTLP
    header variables stay out unless `env` names them. `False`: a local child inherits none."""
    prewarm: int = 0
    """Children kept spawned and past `initialize` (0 to 64), each used for exactly
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
        check_child_config(self, "ACPConfig")
        object.__setattr__(self, "fs", _check_fs(self.fs))
        if not isinstance(self.terminal, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _fail("terminal", "must be True or False")
        for key in ("mode", "model"):
            value: object = getattr(self, key)
            if value is not None and (not isinstance(value, str) or value == ""):
                raise _fail(key, "must be a non-empty string or None")

    @property
    def argv(self) -> list[str]:
        """The child's full argv."""
        return [self.command, *self.args]

    def child_command(self, cwd: Path) -> ChildCommand:
        """The child's command for `cwd` (already checked); with `remote`, `open_managed_process`
        spawns the `ssh` client that runs it there."""
        otel = otel_env(self.otel_passthrough, remote=self.remote is not None)
        env = {**otel, **self.env} if otel else self.env
        return ChildCommand(
            command=self.command, args=tuple(self.args), env=env, cwd=cwd, remote=self.remote
        )


def _check_fs(fs: object) -> FileSystemMode:
    if fs == "none":
        return "none"
    if fs == "read":
        return "read"
    if fs == "read-write":
        return "read-write"
    raise _fail("fs", 'must be "none", "read" or "read-write"')
