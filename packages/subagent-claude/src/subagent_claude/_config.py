"""`ClaudeConfig`: how to start a Claude Code child, checked once at construction.

Every bad value is a `ValueError` naming the key, so a misconfigured provider fails where it is
built, not in the middle of a run. The command fields are validated by
`subagent_core.ChildCommand`, the rules every provider shares; only `provider_name` ever
reaches diagnostic text, so it is restricted to a safe token. Extra `args` may not name the
options this provider owns (the wire format, the permission mode and prompt tool), so the
policy here cannot be shadowed from the command line.
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

from subagent_core import PermissionSetting, Placement
from subagent_core.kit import (
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_STARTUP_TIMEOUT_SECONDS,
    ChildCommand,
    ChildStderr,
    Teardown,
    check_permission,
    check_timeout,
    enterable_directory,
)

SystemPrompt = Literal["none", "claude_code"]
"""`none`: an empty system prompt (the Agent SDKs' default); `claude_code`: the CLI's own."""

DEFAULT_WRITE_TIMEOUT_SECONDS = 10.0
"""How long one write to a child that does not read its stdin may block before the run ends."""

RESERVED_OPTIONS = frozenset(
    {
        "--output-format",
        "--input-format",
        "--permission-prompt-tool",
        "--permission-mode",
        "--permission-prompts",
        "--dangerously-skip-permissions",
        "--allow-dangerously-skip-permissions",
        "--setting-sources",
        "--json-schema",
        "-p",
        "--print",
    }
)
"""Options the provider sets itself; `args` naming one is a configuration error."""

_SECURE_STORAGE = "CLAUDE_SECURESTORAGE_CONFIG_DIR"
"""Where the CLI keeps its login, apart from its `CLAUDE_CONFIG_DIR` (Claude Code 2.1.x)."""

_PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_OWNER = "ClaudeConfig"


def _fail(key: str, requirement: str) -> ValueError:
    return ValueError(f"{_OWNER}.{key} {requirement}")


def _positive_seconds(key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(key, "must be a number of seconds")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise _fail(key, "must be positive and finite")
    return seconds


def _positive_int(key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _fail(key, "must be a positive int")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaudeConfig:
    """How the Claude provider starts and stops each child.

    Raises:
        ValueError: a value is missing, of the wrong type or out of range; the message names
            the key and never echoes the value.
    """

    command: str | None = None
    """The CLI to run. `None`: `claude` on PATH, else the CLI bundled in an installed
    `claude-agent-sdk` wheel (the `[cli]` extra), resolved at each start."""
    args: Sequence[str] = ()
    """Extra arguments, placed right after the command (so a launcher such as `python -m …`
    works; the CLI takes options in any order). Stored as a tuple."""
    provider_name: str = "claude"
    """Registry name and the `provider:` field of diagnostics (letters, digits, `._-`)."""
    cwd: Path | None = None
    """The child's cwd; `None` uses each request's (absolute, enterable) cwd."""
    permission: PermissionSetting = "reject"
    """Every `can_use_tool` request: `allow`, `reject`, a per-kind mapping with a `"*"`
    default, or an async callback `(PermissionAsk) -> option kind | None`."""
    model: str | None = None
    """`--model`; `None` leaves the CLI's default."""
    max_turns: int | None = None
    """`--max-turns`; `None` leaves the CLI's default."""
    system_prompt: SystemPrompt = "none"
    read_user_settings: bool = False
    """`False`: no user/project/local settings are read (`--setting-sources` empty), so the
    policy here is authoritative; `True` lets the host's settings (allow rules, hooks) apply."""
    env: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    """Explicit child environment laid over the scrubbed parent environment; `None` removes an
    inherited name. `ANTHROPIC_API_KEY` and friends reach the child only through here."""
    dispose_eof_grace_seconds: float = 0.5
    """After stdin EOF, before SIGTERM to the tree (the CLI exits on EOF between turns)."""
    dispose_grace_seconds: float = 0.5
    """After SIGTERM, before SIGKILL to the tree."""
    dispose_kill_grace_seconds: float = 3.0
    """After SIGKILL, before reporting the tree not gone."""
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    """Longest accepted line from the child; a longer one ends the run as `transport`."""
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    """Most output text (UTF-8 bytes) a run keeps; the rest is cut behind a fixed marker."""
    write_timeout_seconds: float = DEFAULT_WRITE_TIMEOUT_SECONDS
    """Bound on one write to the child; a write blocked longer ends the run as `transport`."""
    startup_timeout_seconds: float | None = DEFAULT_STARTUP_TIMEOUT_SECONDS
    """Spawn to publication (the control handshake); `None` disables."""
    idle_timeout_seconds: float | None = DEFAULT_IDLE_TIMEOUT_SECONDS
    """After publication, the longest time with no frame at all; `None` disables."""
    remote: Placement | None = None
    """Where each child runs (`None`: this host): a `Placement` such as `SSHRemote` or
    `subagent_ray.RayPlacement`, under its containment guard; `command`, `env` and the workspace
    path then apply there (`None` command runs `claude` from its PATH)."""
    child_stderr: ChildStderr = field(default_factory=ChildStderr)
    """What becomes of each child's stderr (`subagent_core.kit.ChildStderr`): always drained,
    into a bounded log file per child under `log_dir`, or dropped (the default); `live=True`
    also copies it to this process's stderr, for a person at a terminal. Never inherited: it
    is the child's text (its logs, session ids, whatever it printed)."""

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "provider_name", _check_provider_name(self.provider_name))
        command = self._child_command(self.command or "claude", self.cwd)
        if command.cwd is not None and not enterable_directory(command.cwd):
            raise _fail("cwd", "must be an existing directory the process can enter")
        if any(_option_name(arg) in RESERVED_OPTIONS for arg in command.args):
            raise _fail("args", "must not set an option the provider owns")
        set_(self, "args", command.args)
        set_(self, "env", command.env)
        set_(self, "cwd", command.cwd)
        set_(self, "permission", check_permission(self.permission, owner=_OWNER))
        if self.model is not None and (not isinstance(self.model, str) or self.model == ""):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _fail("model", "must be a non-empty string or None")
        if self.max_turns is not None:
            set_(self, "max_turns", _positive_int("max_turns", self.max_turns))
        if self.system_prompt not in ("none", "claude_code"):
            raise _fail("system_prompt", 'must be "none" or "claude_code"')
        if not isinstance(self.read_user_settings, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _fail("read_user_settings", "must be True or False")
        teardown = Teardown.checked(
            _OWNER,
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
            set_(self, key, check_timeout(getattr(self, key), owner=_OWNER, name=key))
        set_(self, "max_frame_bytes", _positive_int("max_frame_bytes", self.max_frame_bytes))
        set_(self, "max_output_bytes", _positive_int("max_output_bytes", self.max_output_bytes))
        if not isinstance(cast(object, self.child_stderr), ChildStderr):
            raise _fail("child_stderr", "must be a subagent_core.kit.ChildStderr")

    @property
    def teardown(self) -> Teardown:
        """The three graces of the ladder as one value."""
        return Teardown(
            self.dispose_eof_grace_seconds,
            self.dispose_grace_seconds,
            self.dispose_kill_grace_seconds,
        )

    def _child_command(self, command: str, cwd: Path | None) -> ChildCommand:
        try:
            return ChildCommand(
                command=command,
                args=cast("tuple[str, ...]", self.args),
                env=self.env,
                cwd=cwd,
                remote=self.remote,
            )
        except ValueError as error:
            raise ValueError(f"{_OWNER}.{error}") from None

    def child_command(
        self, command: str, cwd: Path, tail: Sequence[str], config_dir: Path | None = None
    ) -> ChildCommand:
        """The child for `cwd`: `command`, `args`, then the provider's own options (`tail`).

        `config_dir` is a resumable session's own `CLAUDE_CONFIG_DIR` (its transcripts and
        the CLI's state). The login stays where the user keeps it: the CLI reads
        `.credentials.json` (and the keychain entry) from `CLAUDE_SECURESTORAGE_CONFIG_DIR`,
        set to the config dir a one-shot child would use unless `env` or the parent sets it.
        """
        env = self.env
        if config_dir is not None:
            session = dict(env)
            session["CLAUDE_CONFIG_DIR"] = str(config_dir)
            if self._child_sees(_SECURE_STORAGE) is None:
                # "" is the CLI's own default: `~/.claude` and the unsuffixed keychain entry.
                session[_SECURE_STORAGE] = self._child_sees("CLAUDE_CONFIG_DIR") or ""
            env = session
        return ChildCommand(
            command=command,
            args=(*self.args, *tail),
            env=env,
            cwd=cwd,
            remote=self.remote,
        )

    def user_config_dir(self) -> Path:
        """The config dir a one-shot child uses: `CLAUDE_CONFIG_DIR`, else `~/.claude`."""
        configured = self._child_sees("CLAUDE_CONFIG_DIR")
        if configured:
            return Path(configured)
        home = self._child_sees("HOME")
        return (Path(home) if home else Path.home()) / ".claude"

    def _child_sees(self, name: str) -> str | None:
        """The value of `name` in a child's environment: `env`'s (`None`: removed), else
        the parent's."""
        if name in self.env:
            return self.env[name]
        return os.environ.get(name)


def _option_name(arg: str) -> str:
    return arg.split("=", 1)[0]


def _check_provider_name(name: object) -> str:
    if not isinstance(name, str) or _PROVIDER_NAME.fullmatch(name) is None:
        raise _fail(
            "provider_name", "must be 1-64 letters, digits, '.', '_' or '-', starting alnum"
        )
    return name
