"""A provider table → `ProviderSettings`, each value checked once, by the provider's own config.

```
[providers.<name>]  (or a built-in, an agent by name, a demo child: the same path)
  │ kind / preset ───────────────▶ which config; a preset gives the defaults
  │ TOML types (toml_values) ────▶ strings, lists, tables, booleans, as Python values
  ├─ the provider's keys ────────▶ ACPConfig / SDKConfig / ClaudeConfig / CodexConfig /
  │                                ModelChildConfig(...)   (validated there, once)
  │     ValueError "ACPConfig.fs must be …" ──▶ ConfigError "providers.<name>.fs: must be …"
  └─ this host's keys ───────────▶ env (references), cwd, remote / ray ──▶ ProviderSettings
```

The harness checks only what is its own: the table's shape (known keys, TOML types), a
required `command`, and `permission`, whose `ask` means this terminal (it becomes the terminal
prompt callback the provider calls). The provider packages are imported here only when a table
of their kind is read, so `import harness` stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypedDict, TypeVar, cast

from .placement import PLACEMENT_KEYS, read_placement
from .presets import NATIVE_KINDS, Preset, find_preset, preset_names
from .settings import (
    DEFAULT_MODEL,
    FileSystemMode,
    ModelChildConfig,
    ProviderKind,
    ProviderSettings,
    WorkMode,
)
from .toml_values import (
    ConfigError,
    read_bool,
    read_list,
    read_optional_string,
    read_positive_int,
    read_string,
    read_string_table,
    reject_unknown,
)

if TYPE_CHECKING:
    from subagent_codex import Sandbox
    from subagent_core import PermissionSetting

    from .settings import ChildConfig

_C = TypeVar("_C")


class _Teardown(TypedDict):
    """The three graces as the table gives them (the provider's config checks each)."""

    dispose_eof_grace_seconds: float
    dispose_grace_seconds: float
    dispose_kill_grace_seconds: float


TEARDOWN_DEFAULTS: Final = {
    "dispose_eof_grace_seconds": 0.5,
    "dispose_grace_seconds": 0.5,
    "dispose_kill_grace_seconds": 3.0,
}
"""The teardown ladder of a table that sets none: short, since real agents ignore EOF."""

_COMMON_KEYS = {"kind"}
_PROCESS_KEYS = {
    "command",
    "args",
    "cwd",
    "env",
    "otel_passthrough",
    *TEARDOWN_DEFAULTS,
    *PLACEMENT_KEYS,
}
_KIND_KEYS: dict[str, set[str]] = {
    "acp": _COMMON_KEYS | _PROCESS_KEYS | {"permission", "fs", "terminal", "model", "mode"},
    "sdk": _COMMON_KEYS | _PROCESS_KEYS | {"provider", "model", "max_tokens"},
    "model": _COMMON_KEYS | {"mode"},
    "claude": _COMMON_KEYS | _PROCESS_KEYS | {"permission", "model"},
    "codex": _COMMON_KEYS | _PROCESS_KEYS | {"permission", "sandbox", "model", "config_overrides"},
}


def provider_from_table(
    name: str, table: Mapping[str, object], *, base: Path = Path(), source: Path | None = None
) -> ProviderSettings:
    """The provider `table` describes under `name`; relative paths in it start at `base`.

    Raises:
        ConfigError: a key is unknown or has a bad value (names `providers.<name>.<key>`).
    """
    prefix = f"providers.{name}"
    if not name.strip():
        raise ConfigError(prefix, "a provider name must not be empty")
    preset = _preset(table, prefix)
    kind = table.get("kind", preset.kind if preset is not None else None)
    if kind not in _KIND_KEYS:
        raise ConfigError(
            f"{prefix}.kind", 'must be "acp", "sdk", "model", "claude" or "codex" (or give preset)'
        )
    kind = cast(ProviderKind, kind)
    if preset is not None and kind != preset.kind:
        raise ConfigError(f"{prefix}.kind", f'preset "{preset.name}" is of kind "{preset.kind}"')
    reject_unknown(table, _KIND_KEYS[kind] | ({"preset"} if preset else set()), prefix)
    if kind == "model":
        mode = read_string(table, "mode", prefix, "ask")
        config = _checked(prefix, lambda: ModelChildConfig(mode=cast("WorkMode", mode)))
        return ProviderSettings(name=name, kind=kind, config=config, source=source)
    command = read_optional_string(table, "command", prefix)
    if command is None and preset is not None and kind not in NATIVE_KINDS:
        command = preset.command or preset.program
    if command is None and kind not in NATIVE_KINDS:
        # The native providers find their CLI themselves (on PATH or bundled in a wheel).
        raise ConfigError(f"{prefix}.command", "is required (the program to start)")
    cwd_text = read_optional_string(table, "cwd", prefix)
    env = read_string_table(table, "env", prefix)
    remote, ray = read_placement(table, base, prefix)
    return ProviderSettings(
        name=name,
        kind=kind,
        config=_child_config(kind, command, table, prefix, preset),
        command=command,
        preset=None if preset is None else preset.name,
        env=env if preset is None else {**preset.env, **env},
        unset_env=() if preset is None else preset.unset,
        credentials=() if preset is None else preset.credentials,
        requires_credential=False if preset is None else preset.requires_credential,
        cwd=None if cwd_text is None else (base / cwd_text).resolve(),
        remote=remote,
        ray=ray,
        source=source,
    )


def preset_settings(preset: Preset) -> ProviderSettings:
    """The provider a preset is when named with no config table."""
    return provider_from_table(preset.name, {"preset": preset.name})


def _child_config(
    kind: ProviderKind,
    command: str | None,
    table: Mapping[str, object],
    prefix: str,
    preset: Preset | None,
) -> ChildConfig:
    """The provider config of a child-process kind, from the keys the provider checks."""
    args = tuple(read_list(table, "args", prefix, item=str))
    if preset is not None and "args" not in table:
        args = preset.args
    teardown = cast(
        _Teardown,
        {
            key: table[key] if key in table else getattr(preset, key) if preset else default
            for key, default in TEARDOWN_DEFAULTS.items()
        },
    )
    otel_passthrough = read_bool(table, "otel_passthrough", prefix)
    # ACP and SDK children have no default program: provider_from_table required one.
    program = command or ""
    if kind == "sdk":
        from subagent_sdk import SDKConfig

        provider = read_string(table, "provider", prefix, "deepseek-official")
        model = read_string(table, "model", prefix, DEFAULT_MODEL)
        max_tokens = read_positive_int(table, "max_tokens", prefix)
        return _checked(
            prefix,
            lambda: SDKConfig(
                command=program,
                args=args,
                provider=provider,
                model=model,
                max_tokens=max_tokens,
                otel_passthrough=otel_passthrough,
                **teardown,
            ),
        )
    permission = _permission(table, prefix)
    model = read_optional_string(table, "model", prefix)
    if kind == "acp":
        from subagent_acp import ACPConfig

        fs = read_string(table, "fs", prefix, "none")
        terminal = read_bool(table, "terminal", prefix)
        mode = read_optional_string(table, "mode", prefix) or (preset.mode if preset else None)
        return _checked(
            prefix,
            lambda: ACPConfig(
                command=program,
                args=args,
                permission=permission,
                fs=cast("FileSystemMode", fs),
                terminal=terminal,
                mode=mode,
                model=model,
                otel_passthrough=otel_passthrough,
                **teardown,
            ),
        )
    if kind == "claude":
        from subagent_claude import ClaudeConfig

        return _checked(
            prefix,
            lambda: ClaudeConfig(
                command=command,
                args=args,
                permission=permission,
                model=model,
                otel_passthrough=otel_passthrough,
                **teardown,
            ),
        )
    from subagent_codex import CodexConfig

    sandbox = read_string(table, "sandbox", prefix, "workspace-write")
    overrides = read_string_table(table, "config_overrides", prefix)
    return _checked(
        prefix,
        lambda: CodexConfig(
            command=command,
            args=args,
            permission=permission,
            sandbox=cast("Sandbox", sandbox),
            model=model,
            config_overrides=overrides,
            otel_passthrough=otel_passthrough,
            **teardown,
        ),
    )


def _permission(table: Mapping[str, object], prefix: str) -> PermissionSetting:
    """`allow` or `reject` as the provider takes them; `ask` becomes the terminal prompt.

    Raises:
        ConfigError: any other answer.
    """
    answer = read_string(table, "permission", prefix, "reject")
    if answer == "ask":
        from harness._console.terminal_prompt import terminal_permission

        return terminal_permission()
    if answer == "allow" or answer == "reject":
        return answer
    raise ConfigError(f"{prefix}.permission", 'must be "allow", "reject" or "ask"')


def _checked(prefix: str, build: Callable[[], _C]) -> _C:
    """`build()`, its `ValueError` (`"<Config>.<key> <problem>"`) named by table and key.

    Raises:
        ConfigError: the config refused a value: `providers.<name>.<key>: <problem>`.
    """
    try:
        return build()
    except ValueError as error:
        field_name, _, problem = str(error).partition(" ")
        key = field_name.partition(".")[2]
        raise ConfigError(f"{prefix}.{key}" if key else prefix, problem) from None


def _preset(table: Mapping[str, object], prefix: str) -> Preset | None:
    name = read_optional_string(table, "preset", prefix)
    if name is None:
        return None
    preset = find_preset(name)
    if preset is None:
        raise ConfigError(f"{prefix}.preset", f"must be one of {', '.join(preset_names())}")
    return preset
