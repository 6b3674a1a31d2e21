"""`SDKConfig`: how to start and drive an SDK runtime, validated at construction.

The command, argv, environment and cwd are validated by `subagent_core.kit.ChildCommand`, the one
description of a child every provider shares, so they are accepted or refused by the same rules
as everywhere else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, cast

from subagent_core import Placement
from subagent_core.kit import (
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_STARTUP_TIMEOUT_SECONDS,
    ChildCommand,
    Teardown,
    check_timeout,
)

from ._connection import DEFAULT_WRITE_TIMEOUT_SECONDS

DEFAULT_PROVIDER_NAME: Final = "dsh-sdk"

MAX_PREWARM: Final = 64
"""Most warm runtimes one provider keeps."""


def _no_env() -> dict[str, str | None]:
    return {}


def _reject(key: str, why: str) -> ValueError:
    return ValueError(f"SDKConfig.{key} {why}")


def _positive_seconds(key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _reject(key, "must be a number of seconds")
    if not math.isfinite(value) or value <= 0:
        raise _reject(key, "must be positive and finite")
    return float(value)


def _non_empty(key: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise _reject(key, "must be a non-empty string")


@dataclass(frozen=True, slots=True, kw_only=True)
class SDKConfig:
    """One SDK provider's settings; every field is checked when the config is built.

    Raises:
        ValueError: a field is invalid; the message names the key.
    """

    provider_name: str = DEFAULT_PROVIDER_NAME
    """Registry name; also the `provider:` of diagnostics."""
    command: str
    """The runtime executable, argv[0]; never shell-interpreted."""
    args: Sequence[str] = ()
    """The argv tail."""
    cwd: Path | str | None = None
    """Runtime cwd and `initialize` cwd; relative → resolved now. Default: the request's cwd."""
    provider: str = "deepseek-official"
    """`initialize.provider`: which model provider the runtime should use."""
    model: str = "deepseek-chat"
    """`initialize.model`."""
    max_tokens: int | None = None
    """`initialize.maxTokens`, a positive int; left out of the handshake when `None`."""
    env: Mapping[str, str | None] = field(default_factory=_no_env)
    """Explicit child env laid over the scrubbed parent env; `None` removes a name (read-only)."""
    shutdown_timeout_seconds: float = 0.5
    """Bound on the `shutdown` request before the ladder; the EOF grace runs alongside it. A
    cooperative runtime answers within milliseconds, so it is as short as the EOF grace."""
    dispose_eof_grace_seconds: float = 0.5
    """After stdin EOF, before SIGTERM. Short: `shutdown` already asked the runtime to flush
    and exit, a cooperative one exits on EOF in milliseconds, and many ignore EOF entirely."""
    dispose_grace_seconds: float = 0.5
    """After SIGTERM, before SIGKILL."""
    dispose_kill_grace_seconds: float = 3.0
    """After SIGKILL, before reporting the tree not gone."""
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    """Longest accepted line from the runtime; a longer one is a transport failure."""
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    """Most output a run keeps (UTF-8 bytes); past it text is dropped and a marker follows."""
    write_timeout_seconds: float = DEFAULT_WRITE_TIMEOUT_SECONDS
    """A write to the runtime blocked this long (it stopped reading) ends the run: `transport`."""
    startup_timeout_seconds: float | None = DEFAULT_STARTUP_TIMEOUT_SECONDS
    """Spawn to publication (spawn and `initialize`; a warm runtime's are bounded the same way
    when it is started). On expiry the runtime is rolled back and the start fails with
    `stage: initialize; category: timeout`. `None` disables it."""
    idle_timeout_seconds: float | None = DEFAULT_IDLE_TIMEOUT_SECONDS
    """After publication, the longest time without a single line from the runtime; on expiry
    the run ends `error` + `stage: session-run; category: timeout`, output so far kept (the
    wire has no cancel method: `dispose()` shuts the runtime down). `None` disables it."""
    prewarm: int = 0
    """Runtimes kept spawned and past `initialize`, each used for one run (0: none)."""
    remote: Placement | None = None
    """Where each runtime runs (`None`: this host): a `Placement` such as `SSHRemote` or
    `subagent_ray.RayPlacement`, under its containment guard; `command`, `env` and the
    workspace path then apply there."""

    def __post_init__(self) -> None:
        # Values may come from a config file, so every check works on `object`.
        _non_empty("provider_name", self.provider_name)
        command = self.child_command
        object.__setattr__(self, "args", command.args)
        object.__setattr__(self, "env", command.env)
        object.__setattr__(self, "cwd", command.cwd)
        _non_empty("provider", self.provider)
        _non_empty("model", self.model)
        tokens = cast(object, self.max_tokens)
        if tokens is not None and not _positive_int(tokens):
            raise _reject("max_tokens", "must be a positive int or None")
        for key in ("shutdown_timeout_seconds", "write_timeout_seconds"):
            object.__setattr__(self, key, _positive_seconds(key, getattr(self, key)))
        teardown = Teardown.checked(
            "SDKConfig",
            self.dispose_eof_grace_seconds,
            self.dispose_grace_seconds,
            self.dispose_kill_grace_seconds,
        )
        object.__setattr__(self, "dispose_eof_grace_seconds", teardown.eof_grace_seconds)
        object.__setattr__(self, "dispose_grace_seconds", teardown.term_grace_seconds)
        object.__setattr__(self, "dispose_kill_grace_seconds", teardown.kill_grace_seconds)
        for key in ("startup_timeout_seconds", "idle_timeout_seconds"):
            value = check_timeout(getattr(self, key), owner="SDKConfig", name=key)
            object.__setattr__(self, key, value)
        for key in ("max_frame_bytes", "max_output_bytes"):
            if not _positive_int(getattr(self, key)):
                raise _reject(key, "must be a positive int")
        prewarm = cast(object, self.prewarm)
        if not (
            isinstance(prewarm, int)
            and not isinstance(prewarm, bool)
            and 0 <= prewarm <= MAX_PREWARM
        ):
            raise _reject("prewarm", f"must be an int from 0 to {MAX_PREWARM}")

    @property
    def teardown(self) -> Teardown:
        """The three graces of the ladder as one value."""
        return Teardown(
            self.dispose_eof_grace_seconds,
            self.dispose_grace_seconds,
            self.dispose_kill_grace_seconds,
        )

    @property
    def child_command(self) -> ChildCommand:
        """The runtime as a `ChildCommand` (command, args, env overlay, cwd).

        Raises:
            ValueError: `SDKConfig.<field> …`, when a field breaks `ChildCommand`'s rules.
        """
        try:
            # ChildCommand checks the types itself (any sequence, str or PathLike), so the
            # values go in as they came.
            return ChildCommand(
                command=self.command,
                args=cast("tuple[str, ...]", self.args),
                env=self.env,
                cwd=cast("Path | None", self.cwd),
                remote=self.remote,
            )
        except ValueError as error:
            raise ValueError(f"SDKConfig.{error}") from None


def _positive_int(value: object) -> bool:
    """True for an int above zero (a bool is not an int here)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
