"""Settings → providers and the registry: the one place provider objects are made.

```
HarnessConfig ─┬─ builtin_providers(endpoint)  acp / dsh-sdk (this harness as a child), model
               └─ its [providers.*] tables     (a table of a built-in's name replaces it)
                      │ provider_settings / find_provider / require_provider (-a NAME)
                      ▼                           (an agent by name when nothing else is called so)
               ProviderSettings ──build_provider──▶ config + this run's facts ──▶ XProvider
                      name, env resolved now, cwd, placement (placement.py), child stderr log,
                      command-line overrides (overrides.py)
                      ▼
               build_registry ──▶ SubagentRegistry
```
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypedDict

from subagent_acp import ACPConfig, ACPProvider
from subagent_claude import ClaudeConfig, ClaudeProvider
from subagent_codex import CodexConfig, CodexProvider
from subagent_core import Placement, SubagentProvider, SubagentRegistry
from subagent_core.kit import ChildStderr
from subagent_sdk import SDKProvider

from harness._config.endpoint import MissingKeyError, ResolvedEndpoint
from harness._config.presets import PRESETS, preset_names
from harness._config.provider_tables import preset_settings, provider_from_table
from harness._config.settings import API_KEY_ENV, HarnessConfig, ModelChildConfig, ProviderSettings
from harness._console.exit_codes import UsageError

from .child_stderr import ChildStderrLogs
from .overrides import ProviderOverrides
from .placement import placement_of

HARNESS_ARGV: tuple[str, ...] = (sys.executable, "-m", "harness")
"""How this harness starts itself as a child (works without the console script on PATH)."""


def builtin_providers(endpoint: ResolvedEndpoint | None) -> list[ProviderSettings]:
    """The built-ins: this harness as ACP and SDK child, and the in-process `model`.

    The children get the endpoint on their command line and the key through their explicit
    env as a reference resolved at spawn (the inherited environment is scrubbed of
    credential-shaped names, and the key itself is never part of the settings).
    """
    flags: list[str] = []
    env: dict[str, str] = {}
    if endpoint is not None:
        flags = ["--base-url", endpoint.base_url, "--model", endpoint.model]
        if endpoint.api_key is not None:
            env[API_KEY_ENV] = f"${{{API_KEY_ENV}}}"
    command, *prefix = HARNESS_ARGV
    return [
        provider_from_table(
            "acp",
            {"kind": "acp", "command": command, "args": [*prefix, "acp-agent", *flags], "env": env},
        ),
        provider_from_table(
            "dsh-sdk",
            {
                "kind": "sdk",
                "command": command,
                "args": [*prefix, "sdk-runtime", *flags],
                "env": env,
            },
        ),
        provider_from_table("model", {"kind": "model"}),
    ]


def provider_settings(
    config: HarnessConfig, endpoint: ResolvedEndpoint | None
) -> list[ProviderSettings]:
    """The built-ins, each replaced by a configured table of the same name, then the others."""
    configured = {item.name: item for item in config.providers}
    builtins = builtin_providers(endpoint)
    builtin_names = {item.name for item in builtins}
    merged = [configured.get(item.name, item) for item in builtins]
    return merged + [item for item in config.providers if item.name not in builtin_names]


def find_provider(
    config: HarnessConfig, endpoint: ResolvedEndpoint | None, name: str
) -> ProviderSettings | None:
    """A configured provider or built-in called `name`, else the preset of that name."""
    for settings in provider_settings(config, endpoint):
        if settings.name == name:
            return settings
    for preset in PRESETS:
        if preset.name == name:
            return preset_settings(preset)
    return None


def require_provider(
    config: HarnessConfig, endpoint: ResolvedEndpoint | None, name: str
) -> ProviderSettings:
    """`find_provider`, for a command line's `-a NAME` (`delegate` and `fanout` alike).

    Raises:
        UsageError: no such provider or preset (the message lists both).
        MissingKeyError: a built-in or `model` provider and no usable endpoint key.
    """
    settings = find_provider(config, endpoint, name)
    if settings is None:
        configured = ", ".join(item.name for item in provider_settings(config, endpoint))
        raise UsageError(
            f'no provider or agent named "{name}" (configured: {configured}; agents: '
            f"{', '.join(preset_names())})"
        )
    if endpoint is None and (is_builtin(config, settings) or settings.kind == "model"):
        raise MissingKeyError
    return settings


def is_builtin(config: HarnessConfig, settings: ProviderSettings) -> bool:
    """Whether `settings` is a built-in no config table replaced (a preset is not one)."""
    return config.provider(settings.name) is None and settings.preset is None


class _RunFacts(TypedDict):
    """What the table's config cannot know until the provider is built for this command."""

    provider_name: str
    cwd: Path | None
    env: dict[str, str | None]
    remote: Placement | None


def build_provider(
    settings: ProviderSettings,
    *,
    endpoint: ResolvedEndpoint | None,
    workspace: Path,
    overrides: ProviderOverrides | None = None,
    child_stderr: ChildStderrLogs | None = None,
) -> SubagentProvider:
    """One provider object for `settings`, with command-line `overrides` applied.

    The provider's config from the table gets this command's facts laid over it (the name, the
    env with its references resolved, the cwd, the placement, the stderr log); `replace` runs
    the provider's own checks again on the whole. Its children's stderr goes to
    `child_stderr`'s logs, or is drained and dropped (`None`); it never reaches the harness's
    own stderr unless those logs are `live`.

    Raises:
        ValueError: the provider package rejected the configuration (message names the key).
        UsageError: a `model` provider without a usable endpoint, an `env` reference to a
            variable that is not set, or an override the provider cannot take.
    """
    overrides = overrides or ProviderOverrides()
    config = settings.config
    if isinstance(config, ModelChildConfig):
        overrides.refuse_for(settings.name, settings.kind)
        from .model_provider import model_provider

        return model_provider(config, endpoint=endpoint, workspace=workspace)
    stderr = ChildStderr() if child_stderr is None else child_stderr.for_provider(settings.name)
    facts = _RunFacts(
        provider_name=settings.name,
        cwd=settings.cwd,
        env=settings.explicit_env(),
        remote=placement_of(settings),
    )
    name = settings.name
    if isinstance(config, ACPConfig):
        acp = replace(config, **facts, child_stderr=stderr)
        return ACPProvider(overrides.apply(acp, provider=name))
    if isinstance(config, ClaudeConfig):
        # A native provider finds its CLI where the child runs: the command as written.
        claude = replace(config, **facts, command=settings.command, child_stderr=stderr)
        return ClaudeProvider(overrides.apply(claude, provider=name))
    if isinstance(config, CodexConfig):
        codex = replace(config, **facts, command=settings.command, child_stderr=stderr)
        return CodexProvider(overrides.apply(codex, provider=name))
    return SDKProvider(overrides.apply(replace(config, **facts), provider=name))


def build_registry(
    providers: Sequence[ProviderSettings],
    *,
    endpoint: ResolvedEndpoint | None,
    workspace: Path,
    overrides: ProviderOverrides | None = None,
    child_stderr: ChildStderrLogs | None = None,
) -> SubagentRegistry:
    """A registry holding every provider in `providers` (in order), `overrides` applied and
    their children's stderr logged to `child_stderr` (else drained and dropped)."""
    registry = SubagentRegistry()
    for settings in providers:
        registry.register(
            build_provider(
                settings,
                endpoint=endpoint,
                workspace=workspace,
                overrides=overrides,
                child_stderr=child_stderr,
            )
        )
    return registry


def with_graces(
    settings: ProviderSettings, eof: float, term: float, kill: float
) -> ProviderSettings:
    """A copy with other teardown graces (the demo, tests and soak use short ones)."""
    config = settings.config
    if isinstance(config, ModelChildConfig):
        return settings  # in-process: no child to tear down
    return replace(
        settings,
        config=replace(
            config,
            dispose_eof_grace_seconds=eof,
            dispose_grace_seconds=term,
            dispose_kill_grace_seconds=kill,
        ),
    )
