"""The native providers (`subagent-claude`, `subagent-codex`), used when they are installed.

They are optional: the harness imports them by name only when a `claude`/`codex` provider is
built, so it works (and `harness agents` reports them "not installed" with the pip command)
without them.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import cast

from subagent_core import SubagentProvider

from ._config import ProviderSettings
from ._exit import UsageError
from ._presets import NATIVE_PACKAGES
from ._provider_overrides import ProviderOverrides
from ._terminal_prompt import terminal_permission

_CLASSES = {"claude": ("ClaudeConfig", "ClaudeProvider"), "codex": ("CodexConfig", "CodexProvider")}


class NotInstalledError(UsageError):
    """A native provider's package is not installed; says what to install."""

    def __init__(self, kind: str) -> None:
        distribution = NATIVE_PACKAGES[kind][1]
        super().__init__(f"the {kind} provider is not installed: pip install '{distribution}[cli]'")


def native_installed(kind: str) -> bool:
    """Whether the provider package for `kind` can be imported."""
    return importlib.util.find_spec(NATIVE_PACKAGES[kind][0]) is not None


def native_provider(
    settings: ProviderSettings, overrides: ProviderOverrides | None = None
) -> SubagentProvider:
    """The `ClaudeProvider` / `CodexProvider` for `settings`.

    Raises:
        NotInstalledError: the package is not installed.
        ValueError: the package rejected the configuration (the message names the key).
        UsageError: an `env` reference to an unset variable, or a needed credential missing.
    """
    kind = settings.kind
    if not native_installed(kind):
        raise NotInstalledError(kind)
    module = importlib.import_module(NATIVE_PACKAGES[kind][0])
    config_name, provider_name = _CLASSES[kind]
    make_config = cast(Callable[..., object], getattr(module, config_name))
    make_provider = cast(Callable[[object], SubagentProvider], getattr(module, provider_name))
    permission = terminal_permission() if settings.permission == "ask" else settings.permission
    config = make_config(
        command=settings.command,
        args=tuple(settings.args),
        provider_name=settings.name,
        cwd=settings.cwd,
        permission=permission,
        model=settings.child_model,
        env=settings.explicit_env(),
        dispose_eof_grace_seconds=settings.dispose_eof_grace_seconds,
        dispose_grace_seconds=settings.dispose_grace_seconds,
        dispose_kill_grace_seconds=settings.dispose_kill_grace_seconds,
        remote=settings.remote,
    )
    return make_provider((overrides or ProviderOverrides()).apply(config, provider=settings.name))
