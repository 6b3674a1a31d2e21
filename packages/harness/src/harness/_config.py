"""`harness.toml`: the model endpoint and the configured providers.

Example::

    [model]
    base_url = "https://api.deepseek.com"   # any OpenAI-compatible server
    model = "deepseek-chat"

    [providers.claude]
    kind = "acp"
    command = "claude-agent-acp"
    permission = "reject"

    [providers.dsh-sdk]
    kind = "sdk"
    command = "harness"
    args = ["sdk-runtime"]

The API key never lives in the file: it is read from `DEEPSEEK_API_KEY`. Every problem is a
`ConfigError` naming the offending key, so the CLI can print one line and exit 2.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar, cast

from ._exit import UsageError

ProviderKind = Literal["acp", "sdk", "model"]
CONFIG_FILE_NAME = "harness.toml"
DEFAULT_BASE_URL = "https://api.deepseek.com"
DEFAULT_MODEL = "deepseek-chat"
API_KEY_ENV = "DEEPSEEK_API_KEY"
BASE_URL_ENV = "DEEPSEEK_BASE_URL"
MODEL_ENV = "DEEPSEEK_MODEL"
_T = TypeVar("_T")


class ConfigError(UsageError):
    """harness.toml is unreadable or a key has a bad value; `key` names it (dotted)."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{CONFIG_FILE_NAME}: {key}: {problem}")
        self.key = key
        self.problem = problem


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSettings:
    """The model endpoint (`[model]`); flags and environment override the file."""

    base_url: str = DEFAULT_BASE_URL
    model: str = DEFAULT_MODEL
    max_tokens: int | None = None
    retry_statuses: tuple[int, ...] = ()
    """HTTP statuses to retry (empty: only transient network failures are retried)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSettings:
    """One `[providers.<name>]` table."""

    name: str
    kind: ProviderKind
    command: str | None = None
    args: tuple[str, ...] = ()
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    permission: Literal["allow", "reject"] = "reject"
    """ACP only: how the child's permission requests are answered."""
    sdk_provider: str = "deepseek-official"
    """SDK only: the `provider` sent in `initialize`."""
    sdk_model: str = DEFAULT_MODEL
    max_tokens: int | None = None
    mode: Literal["ask", "execute"] = "ask"
    """model only: the child's work mode."""
    dispose_eof_grace_seconds: float = 6.0
    dispose_grace_seconds: float = 3.0
    dispose_kill_grace_seconds: float = 3.0


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessConfig:
    """Everything harness.toml configures; `path` is None when defaults were used."""

    model: ModelSettings = field(default_factory=ModelSettings)
    providers: tuple[ProviderSettings, ...] = ()
    path: Path | None = None

    def provider(self, name: str) -> ProviderSettings | None:
        """The provider named `name`, or None."""
        for settings in self.providers:
            if settings.name == name:
                return settings
        return None


_MODEL_KEYS = {"base_url", "model", "max_tokens", "retry_statuses"}
_COMMON_KEYS = {"kind"}
_PROCESS_KEYS = {
    "command",
    "args",
    "cwd",
    "env",
    "dispose_eof_grace_seconds",
    "dispose_grace_seconds",
    "dispose_kill_grace_seconds",
}
_KIND_KEYS: dict[str, set[str]] = {
    "acp": _COMMON_KEYS | _PROCESS_KEYS | {"permission"},
    "sdk": _COMMON_KEYS | _PROCESS_KEYS | {"provider", "model", "max_tokens"},
    "model": _COMMON_KEYS | {"mode"},
}


def load_config(path: Path | None = None, *, workspace: Path | None = None) -> HarnessConfig:
    """Reads `path`, else `<workspace>/harness.toml` if it exists, else the defaults.

    Raises:
        ConfigError: the file cannot be read or parsed, or a key has a bad value.
    """
    if path is None:
        candidate = (workspace or Path.cwd()) / CONFIG_FILE_NAME
        if not candidate.is_file():
            return HarnessConfig()
        path = candidate
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("(file)", f"{path} does not exist") from None
    except (OSError, UnicodeDecodeError):
        raise ConfigError("(file)", f"{path} cannot be read") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError("(file)", f"not valid TOML ({error})") from None
    return parse_config(raw, path=path.resolve())


def parse_config(raw: Mapping[str, object], *, path: Path | None = None) -> HarnessConfig:
    """Validates an already-parsed TOML document.

    Raises:
        ConfigError: a key has a bad value or is unknown.
    """
    for key in raw:
        if key not in ("model", "providers"):
            raise ConfigError(key, "unknown key (expected [model] and [providers.<name>])")
    base = path.parent if path is not None else Path.cwd()
    model = _model(_table(raw.get("model", {}), "model"))
    providers_raw = _table(raw.get("providers", {}), "providers")
    providers = tuple(
        _provider(name, _table(value, f"providers.{name}"), base)
        for name, value in providers_raw.items()
    )
    return HarnessConfig(model=model, providers=providers, path=path)


def _table(value: object, key: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ConfigError(key, "must be a table")
    return cast(dict[str, object], value)


def _model(table: dict[str, object]) -> ModelSettings:
    _reject_unknown(table, _MODEL_KEYS, "model")
    statuses = _list(table, "retry_statuses", "model", item=int)
    for status in statuses:
        if not 100 <= status <= 599:
            raise ConfigError("model.retry_statuses", "must list HTTP status codes (100-599)")
    return ModelSettings(
        base_url=_string(table, "base_url", "model", DEFAULT_BASE_URL),
        model=_string(table, "model", "model", DEFAULT_MODEL),
        max_tokens=_positive_int(table, "max_tokens", "model"),
        retry_statuses=tuple(statuses),
    )


def _provider(name: str, table: dict[str, object], base: Path) -> ProviderSettings:
    prefix = f"providers.{name}"
    if not name.strip():
        raise ConfigError(prefix, "a provider name must not be empty")
    kind = table.get("kind")
    if kind not in _KIND_KEYS:
        raise ConfigError(f"{prefix}.kind", 'must be "acp", "sdk" or "model"')
    kind = cast(ProviderKind, kind)
    _reject_unknown(table, _KIND_KEYS[kind], prefix)
    if kind == "model":
        mode = _string(table, "mode", prefix, "ask")
        if mode not in ("ask", "execute"):
            raise ConfigError(f"{prefix}.mode", 'must be "ask" or "execute"')
        return ProviderSettings(name=name, kind=kind, mode=mode)
    command = _optional_string(table, "command", prefix)
    if command is None:
        raise ConfigError(f"{prefix}.command", "is required (the program to start)")
    cwd_text = _optional_string(table, "cwd", prefix)
    cwd = None if cwd_text is None else (base / cwd_text).resolve()
    env = _table(table.get("env", {}), f"{prefix}.env")
    for env_key, env_value in env.items():
        if not isinstance(env_value, str):
            raise ConfigError(f"{prefix}.env.{env_key}", "must be a string")
    permission = _string(table, "permission", prefix, "reject")
    if permission not in ("allow", "reject"):
        raise ConfigError(f"{prefix}.permission", 'must be "allow" or "reject"')
    return ProviderSettings(
        name=name,
        kind=kind,
        command=command,
        args=tuple(_list(table, "args", prefix, item=str)),
        cwd=cwd,
        env=cast(dict[str, str], env),
        permission=permission,
        sdk_provider=_string(table, "provider", prefix, "deepseek-official"),
        sdk_model=_string(table, "model", prefix, DEFAULT_MODEL),
        max_tokens=_positive_int(table, "max_tokens", prefix),
        dispose_eof_grace_seconds=_seconds(table, "dispose_eof_grace_seconds", prefix, 6.0),
        dispose_grace_seconds=_seconds(table, "dispose_grace_seconds", prefix, 3.0),
        dispose_kill_grace_seconds=_seconds(table, "dispose_kill_grace_seconds", prefix, 3.0),
    )


def _reject_unknown(table: Mapping[str, object], allowed: set[str], prefix: str) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(f"{prefix}.{key}", "unknown key")


def _optional_string(table: Mapping[str, object], key: str, prefix: str) -> str | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{prefix}.{key}", "must be a non-empty string")
    return value


def _string(table: Mapping[str, object], key: str, prefix: str, default: str) -> str:
    value = _optional_string(table, key, prefix)
    return default if value is None else value


def _positive_int(table: Mapping[str, object], key: str, prefix: str) -> int | None:
    if key not in table:
        return None
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{prefix}.{key}", "must be a positive integer")
    return value


def _seconds(table: Mapping[str, object], key: str, prefix: str, default: float) -> float:
    if key not in table:
        return default
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{prefix}.{key}", "must be a number of seconds")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"{prefix}.{key}", "must be positive and finite")
    return seconds


def _list(table: Mapping[str, object], key: str, prefix: str, *, item: type[_T]) -> list[_T]:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{prefix}.{key}", f"must be a list of {item.__name__}")
    items = cast(list[object], value)
    for element in items:
        if not isinstance(element, item) or isinstance(element, bool):
            raise ConfigError(f"{prefix}.{key}", f"must be a list of {item.__name__}")
    return cast(list[_T], items)
