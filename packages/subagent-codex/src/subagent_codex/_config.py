"""`CodexConfig`: how to start a Codex app-server child, checked once at construction.

Every bad value is a `ValueError` naming the key, so a misconfigured provider fails where it is
built. The command fields (`command`, `args`, `env`, `cwd`, `remote`) are validated by
`subagent_core.ChildCommand`, the rules every provider shares. Only `provider_name` ever reaches
diagnostic text, so it is restricted to a safe token.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, cast

from subagent_core import PermissionSetting, Placement
from subagent_core.kit import (
    ChildBounds,
    ChildCommand,
    ChildStderr,
    check_child_config,
    otel_env,
)

Sandbox = Literal["read-only", "workspace-write", "danger-full-access"]
"""The thread's sandbox: what codex's commands may touch without asking."""

_OVERRIDE_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_SANDBOXES: tuple[Sandbox, ...] = ("read-only", "workspace-write", "danger-full-access")


def _fail(key: str, requirement: str) -> ValueError:
    return ValueError(f"CodexConfig.{key} {requirement}")


def bundled_codex() -> str | None:
    """The binary of an installed `openai-codex-cli-bin` (the `[cli]` extra), if any."""
    try:
        import codex_cli_bin  # pyright: ignore[reportMissingImports]
    except ImportError:
        return None
    try:
        path = cast(object, codex_cli_bin.bundled_codex_path())  # pyright: ignore
    except Exception:
        return None
    return path if isinstance(path, str) else str(path) if isinstance(path, Path) else None


def resolve_command() -> str:
    """`codex` on PATH, else the bundled binary, else plain `codex` (a spawn error later)."""
    return shutil.which("codex") or bundled_codex() or "codex"


@dataclass(frozen=True, slots=True, kw_only=True)
class CodexConfig(ChildBounds):
    """How the Codex provider starts and stops each `codex app-server` child.

    The bounds are `ChildBounds`': the startup deadline covers the handshake and the thread's
    start, the idle deadline counts any frame as a sign of life, and codex exits on EOF within
    milliseconds.

    Raises:
        ValueError: a value is missing, of the wrong type or out of range; the message names
            the key.
    """

    command: str | None = None
    """The executable; `None` finds `codex` on PATH, else the `[cli]` extra's bundled binary."""
    args: Sequence[str] = ()
    """Extra arguments before `app-server` (stored as a tuple)."""
    provider_name: str = "codex"
    """Registry name and the `provider:` field of diagnostics (letters, digits, `._-`)."""
    cwd: Path | None = None
    """The child's cwd and its thread's cwd; `None` uses each request's (absolute) cwd."""
    permission: PermissionSetting = "reject"
    """`reject`: approval policy `never`, any request declined; `allow`: `on-request`, each
    request accepted once (never for the session); a per-kind mapping or an async callback
    (`PermissionAsk` → option kind or `None`) decides each request."""
    sandbox: Sandbox = "workspace-write"
    """The thread's sandbox. Plain commands never ask: the sandbox alone decides, so a child
    that must not write needs `read-only`."""
    model: str | None = None
    """The thread's model (`None`: codex's configured default)."""
    config_overrides: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Each entry becomes `-c KEY=VALUE` (VALUE is TOML), e.g. a model provider."""
    env: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))
    """Explicit child environment over the scrubbed parent environment; `None` removes an
    inherited name. `OPENAI_API_KEY`, `CODEX_HOME` and ambient `DSH_*` values reach the child
    only through here."""
    otel_passthrough: bool = False
    """Pass this process's `OTEL_*` variables to the child (`subagent_core.kit.otel_env`); the
    OTLP header variables stay out unless `env` names them. `False`: a local child inherits
    none. Codex configures its own exporter in its config (`otel.*`), not from these."""
    remote: Placement | None = None
    """Where each child runs (`None`: this host): a `Placement` such as `SSHRemote` or
    `subagent_ray.RayPlacement`, under its containment guard; `command`, `env` and the workspace
    path then apply there."""
    child_stderr: ChildStderr = field(default_factory=ChildStderr)
    """What becomes of each child's stderr (`subagent_core.kit.ChildStderr`): always drained,
    into a bounded log file per child under `log_dir`, or dropped (the default); `live=True`
    also copies it to this process's stderr, for a person at a terminal. Never inherited: it
    is the child's text (its logs, session ids, whatever it printed)."""

    def __post_init__(self) -> None:
        if cast(object, self.command) is None:
            # A placement runs the command on another host: only its PATH can find it there.
            command = "codex" if self.remote is not None else resolve_command()
            object.__setattr__(self, "command", command)
        check_child_config(self, "CodexConfig")
        if self.sandbox not in _SANDBOXES:
            raise _fail("sandbox", 'must be "read-only", "workspace-write" or "danger-full-access"')
        model = cast(object, self.model)
        if model is not None and (not isinstance(model, str) or model == ""):
            raise _fail("model", "must be a non-empty string or None")
        object.__setattr__(self, "config_overrides", _check_overrides(self.config_overrides))

    @property
    def argv(self) -> list[str]:
        """The child's full argv: `command args… -c K=V… app-server --listen stdio://`."""
        overrides = [part for key, value in self.config_overrides.items() for part in
                     ("-c", f"{key}={value}")]  # fmt: skip
        assert self.command is not None
        return [self.command, *self.args, *overrides, "app-server", "--listen", "stdio://"]

    def child_command(self, cwd: Path, home: Path | None = None) -> ChildCommand:
        """The child's command for `cwd` (already checked); with `remote`, the managed process
        spawns the local client that runs it there. `home` replaces `CODEX_HOME` (a
        resumable session's own, so its rollout is found again)."""
        argv = self.argv
        env = {**otel_env(self.otel_passthrough, remote=self.remote is not None), **self.env}
        if home is not None:
            env["CODEX_HOME"] = str(home)
        return ChildCommand(
            command=argv[0], args=tuple(argv[1:]), env=env, cwd=cwd, remote=self.remote
        )

    def base_home(self) -> Path:
        """The `CODEX_HOME` a child would use: the configured one, the parent's, `~/.codex`."""
        configured = (
            self.env.get("CODEX_HOME") if "CODEX_HOME" in self.env else os.environ.get("CODEX_HOME")
        )
        return Path(configured) if configured else Path.home() / ".codex"


def _check_overrides(value: object) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise _fail("config_overrides", "must be a mapping of config keys to TOML values")
    checked: dict[str, str] = {}
    for key, item in cast(Mapping[object, object], value).items():
        if not isinstance(key, str) or _OVERRIDE_KEY.fullmatch(key) is None:
            raise _fail("config_overrides", "keys must be dotted config paths")
        if not isinstance(item, str) or "\0" in item:
            raise _fail("config_overrides", "values must be TOML text without NUL")
        checked[key] = item
    return MappingProxyType(checked)
