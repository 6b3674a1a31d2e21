"""`ClaudeConfig`: how to start a Claude Code child, checked once at construction.

Every bad value is a `ValueError` naming the key, so a misconfigured provider fails where it is
built, not in the middle of a run. The command fields are validated by
`subagent_core.ChildCommand`, the rules every provider shares; only `provider_name` ever
reaches diagnostic text, so it is restricted to a safe token. Extra `args` may not name the
options this provider owns (the wire format, the permission mode and prompt tool), so the
policy here cannot be shadowed from the command line.
"""

from __future__ import annotations

import os
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

SystemPrompt = Literal["none", "claude_code"]
"""`none`: an empty system prompt (the Agent SDKs' default); `claude_code`: the CLI's own."""

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

_OWNER = "ClaudeConfig"


def _fail(key: str, requirement: str) -> ValueError:
    return ValueError(f"{_OWNER}.{key} {requirement}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaudeConfig(ChildBounds):
    """How the Claude provider starts and stops each child.

    The bounds are `ChildBounds`': the startup deadline runs from spawn to the answer of the
    control handshake, the idle deadline counts any frame as a sign of life, and the short EOF
    grace suits a CLI that exits on EOF between turns.

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
    otel_passthrough: bool = False
    """Pass this process's `OTEL_*` variables to the child (`subagent_core.kit.otel_env`), for
    the CLI's own exporter (which its `CLAUDE_CODE_ENABLE_TELEMETRY` and friends turn on); the
    OTLP header variables stay out unless `env` names them. `False`: a local child inherits
    none."""
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
        check_child_config(self, _OWNER, default_command="claude")
        if any(_option_name(arg) in RESERVED_OPTIONS for arg in self.args):
            raise _fail("args", "must not set an option the provider owns")
        if self.model is not None and (not isinstance(self.model, str) or self.model == ""):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _fail("model", "must be a non-empty string or None")
        max_turns = cast(object, self.max_turns)
        if max_turns is not None and (
            isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns <= 0
        ):
            raise _fail("max_turns", "must be a positive int")
        if self.system_prompt not in ("none", "claude_code"):
            raise _fail("system_prompt", 'must be "none" or "claude_code"')
        if not isinstance(self.read_user_settings, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _fail("read_user_settings", "must be True or False")

    def child_command(
        self,
        command: str,
        cwd: Path,
        tail: Sequence[str],
        config_dir: Path | None = None,
        *,
        traceparent: str | None = None,
    ) -> ChildCommand:
        """The child for `cwd`: `command`, `args`, then the provider's own options (`tail`).

        `config_dir` is a resumable session's own `CLAUDE_CONFIG_DIR` (its transcripts and
        the CLI's state). The login stays where the user keeps it: the CLI reads
        `.credentials.json` (and the keychain entry) from `CLAUDE_SECURESTORAGE_CONFIG_DIR`,
        set to the config dir a one-shot child would use unless `env` or the parent sets it.

        `traceparent` (the span current at spawn) becomes the CLI's `TRACEPARENT`, the variable
        it continues a trace from, with any inherited `TRACESTATE` removed (it belongs to
        another context); `otel_passthrough` adds this process's `OTEL_*` settings. `env`'s own
        entries win over both.
        """
        env: Mapping[str, str | None] = {
            **otel_env(self.otel_passthrough, remote=self.remote is not None),
            **({} if traceparent is None else {"TRACEPARENT": traceparent, "TRACESTATE": None}),
            **self.env,
        }
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
