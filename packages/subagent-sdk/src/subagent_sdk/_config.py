"""`SDKConfig`: how to start and drive an SDK runtime, validated at construction.

The command, argv, environment and cwd are validated by `subagent_core.kit.ChildCommand`, the one
description of a child every provider shares, so they are accepted or refused by the same rules
as everywhere else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, cast

from subagent_core import Placement
from subagent_core.kit import ChildBounds, ChildCommand, check_child_config, otel_env

DEFAULT_PROVIDER_NAME: Final = "dsh-sdk"


def _no_env() -> dict[str, str | None]:
    return {}


def _reject(key: str, why: str) -> ValueError:
    return ValueError(f"SDKConfig.{key} {why}")


def _non_empty(key: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise _reject(key, "must be a non-empty string")


@dataclass(frozen=True, slots=True, kw_only=True)
class SDKConfig(ChildBounds):
    """One SDK provider's settings; every field is checked when the config is built.

    The bounds are `ChildBounds`': the startup deadline covers the spawn and `initialize` (a
    warm runtime's are bounded the same way when it is started) and fails the start with
    `stage: initialize; category: timeout`; the idle deadline ends a run `error` with `stage:
    session-run; category: timeout`, output so far kept (the wire has no cancel method:
    `dispose()` shuts the runtime down). The EOF grace is short: `shutdown` already asked the
    runtime to flush and exit, and many ignore EOF entirely.

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
    otel_passthrough: bool = False
    """Pass this process's `OTEL_*` variables to the runtime (`subagent_core.kit.otel_env`), for
    an exporter of its own; the OTLP header variables stay out unless `env` names them.
    `False`: a local runtime inherits none."""
    shutdown_timeout_seconds: float = 0.5
    """Bound on the `shutdown` request before the ladder; the EOF grace runs alongside it. A
    cooperative runtime answers within milliseconds, so it is as short as the EOF grace."""
    prewarm: int = 0
    """Runtimes kept spawned and past `initialize`, each used for one run (0: none)."""
    remote: Placement | None = None
    """Where each runtime runs (`None`: this host): a `Placement` such as `SSHRemote` or
    `subagent_ray.RayPlacement`, under its containment guard; `command`, `env` and the
    workspace path then apply there."""

    def __post_init__(self) -> None:
        # Values may come from a config file, so every check works on `object`.
        _non_empty("provider_name", self.provider_name)
        check_child_config(
            self, "SDKConfig", existing_cwd=False, seconds=("shutdown_timeout_seconds",)
        )
        _non_empty("provider", self.provider)
        _non_empty("model", self.model)
        tokens = cast(object, self.max_tokens)
        if tokens is not None and not _positive_int(tokens):
            raise _reject("max_tokens", "must be a positive int or None")

    @property
    def child_command(self) -> ChildCommand:
        """The runtime as a `ChildCommand` (command, args, env overlay, cwd)."""
        otel = otel_env(self.otel_passthrough, remote=self.remote is not None)
        return ChildCommand(
            command=self.command,
            args=tuple(self.args),
            env={**otel, **self.env} if otel else self.env,
            cwd=None if self.cwd is None else Path(self.cwd),
            remote=self.remote,
        )


def _positive_int(value: object) -> bool:
    """True for an int above zero (a bool is not an int here)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
