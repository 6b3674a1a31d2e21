"""Builds the registry of providers from harness.toml (imports the provider packages)."""

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
from subagent_sdk import SDKConfig, SDKProvider

from ._child_stderr import ChildStderrLogs
from ._config import API_KEY_ENV, HarnessConfig, ProviderSettings
from ._endpoint import MissingKeyError, ResolvedEndpoint
from ._exit import UsageError
from ._placement_config import ray_placement
from ._presets import NATIVE_KINDS, PRESETS, Preset, preset_names
from ._provider_overrides import ProviderOverrides
from ._terminal_prompt import terminal_permission

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
        ProviderSettings(
            name="acp",
            kind="acp",
            command=command,
            args=(*prefix, "acp-agent", *flags),
            env=env,
        ),
        ProviderSettings(
            name="dsh-sdk",
            kind="sdk",
            command=command,
            args=(*prefix, "sdk-runtime", *flags),
            env=env,
        ),
        ProviderSettings(name="model", kind="model"),
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


def preset_settings(preset: Preset) -> ProviderSettings:
    """The provider a preset is when named with no config table."""
    return ProviderSettings(
        name=preset.name,
        kind=preset.kind,
        # The native providers find their CLI themselves (on PATH or bundled in a wheel).
        command=None if preset.kind in NATIVE_KINDS else preset.command or preset.program,
        args=preset.args,
        env=dict(preset.env),
        dispose_eof_grace_seconds=preset.dispose_eof_grace_seconds,
        dispose_grace_seconds=preset.dispose_grace_seconds,
        dispose_kill_grace_seconds=preset.dispose_kill_grace_seconds,
        child_mode=preset.mode,
        preset=preset.name,
        unset_env=preset.unset,
        credentials=preset.credentials,
        requires_credential=preset.requires_credential,
    )


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


def build_provider(
    settings: ProviderSettings,
    *,
    endpoint: ResolvedEndpoint | None,
    workspace: Path,
    overrides: ProviderOverrides | None = None,
    child_stderr: ChildStderrLogs | None = None,
) -> SubagentProvider:
    """One provider object for `settings`, with command-line `overrides` applied.

    Its children's stderr goes to `child_stderr`'s logs, or is drained and dropped (`None`);
    it never reaches the harness's own stderr unless those logs are `live`.

    Raises:
        ValueError: the provider package rejected the configuration (message names the key).
        UsageError: a `model` provider without a usable endpoint, an `env` reference to a
            variable that is not set, or an override the provider cannot take.
    """
    overrides = overrides or ProviderOverrides()
    stderr = ChildStderr() if child_stderr is None else child_stderr.for_provider(settings.name)
    if settings.kind == "acp":
        acp = ACPConfig(
            **_process_fields(settings),
            permission=(
                terminal_permission() if settings.permission == "ask" else settings.permission
            ),
            fs=settings.fs,
            terminal=settings.terminal,
            model=settings.child_model,
            mode=settings.child_mode,
            child_stderr=stderr,
        )
        return ACPProvider(overrides.apply(acp, provider=settings.name))
    if settings.kind == "claude":
        claude = _claude_config(settings, stderr)
        return ClaudeProvider(overrides.apply(claude, provider=settings.name))
    if settings.kind == "codex":
        codex = CodexConfig(
            provider_name=settings.name,
            command=settings.command,
            args=list(settings.args),
            cwd=settings.cwd,
            env=settings.explicit_env(),
            permission=(
                terminal_permission() if settings.permission == "ask" else settings.permission
            ),
            sandbox=settings.sandbox,
            model=settings.child_model or settings.codex_model,
            config_overrides=dict(settings.config_overrides),
            dispose_eof_grace_seconds=settings.dispose_eof_grace_seconds,
            dispose_grace_seconds=settings.dispose_grace_seconds,
            dispose_kill_grace_seconds=settings.dispose_kill_grace_seconds,
            remote=placement_of(settings),
            child_stderr=stderr,
        )
        return CodexProvider(overrides.apply(codex, provider=settings.name))
    if settings.kind == "sdk":
        sdk = SDKConfig(
            **_process_fields(settings),
            provider=settings.sdk_provider,
            model=settings.sdk_model,
            max_tokens=settings.max_tokens,
        )
        return SDKProvider(overrides.apply(sdk, provider=settings.name))
    overrides.refuse_for(settings.name, settings.kind)
    from ._model_provider import model_provider

    return model_provider(settings, endpoint=endpoint, workspace=workspace)


def placement_of(settings: ProviderSettings) -> Placement | None:
    """Where the child of `settings` runs: its ssh remote, its Ray cluster, or here (None).

    Raises:
        UsageError: a Ray placement and no `subagent-ray` installed (names the extra).
        ConfigError: `subagent-ray` refused a value of the `ray` table.
    """
    if settings.ray is not None:
        return ray_placement(settings.ray, provider=settings.name, source=settings.source)
    return settings.remote


class _ProcessFields(TypedDict):
    """What ACPConfig and SDKConfig share: the child's command line, place and teardown."""

    provider_name: str
    command: str
    args: list[str]
    cwd: Path | None
    env: dict[str, str | None]
    dispose_eof_grace_seconds: float
    dispose_grace_seconds: float
    dispose_kill_grace_seconds: float
    remote: Placement | None


def _claude_config(settings: ProviderSettings, stderr: ChildStderr) -> ClaudeConfig:
    """A native Claude Code child; no `command` lets the provider find the CLI itself."""
    return ClaudeConfig(
        provider_name=settings.name,
        command=settings.command,
        args=settings.args,
        cwd=settings.cwd,
        env=settings.explicit_env(),
        permission=terminal_permission() if settings.permission == "ask" else settings.permission,
        model=settings.child_model or settings.claude_model,
        dispose_eof_grace_seconds=settings.dispose_eof_grace_seconds,
        dispose_grace_seconds=settings.dispose_grace_seconds,
        dispose_kill_grace_seconds=settings.dispose_kill_grace_seconds,
        remote=placement_of(settings),
        child_stderr=stderr,
    )


def _process_fields(settings: ProviderSettings) -> _ProcessFields:
    assert settings.command is not None  # the config loader requires it for acp and sdk
    return _ProcessFields(
        provider_name=settings.name,
        command=settings.command,
        args=list(settings.args),
        cwd=settings.cwd,
        env=settings.explicit_env(),
        dispose_eof_grace_seconds=settings.dispose_eof_grace_seconds,
        dispose_grace_seconds=settings.dispose_grace_seconds,
        dispose_kill_grace_seconds=settings.dispose_kill_grace_seconds,
        remote=placement_of(settings),
    )


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
    return replace(
        settings,
        dispose_eof_grace_seconds=eof,
        dispose_grace_seconds=term,
        dispose_kill_grace_seconds=kill,
    )
