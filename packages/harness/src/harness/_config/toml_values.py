"""Typed values out of a `harness.toml` table: each reader names the dotted key it refused.

The schemas (`loading`, `provider_tables`) say which keys each table has; these readers say
which TOML type a key's value must be (a provider's own config then checks what it means).
Every refusal is a `ConfigError` naming the file and the key, never echoing the value (it may
be a credential pasted in by mistake), so the CLI can print one line and exit 2.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar, cast

from harness._console.exit_codes import UsageError

CONFIG_FILE_NAME = "harness.toml"
_T = TypeVar("_T")


REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""`${NAME}` in an env value: replaced by the parent's variable NAME when the child is spawned."""


class ConfigError(UsageError):
    """A config file is unreadable or a key has a bad value; names the file and the dotted key."""

    def __init__(self, key: str, problem: str, *, file: Path | None = None) -> None:
        where = str(file) if file is not None else CONFIG_FILE_NAME
        super().__init__(f"{where}: {key}: {problem}")
        self.key = key
        self.problem = problem
        self.file = file


def read_table(value: object, key: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ConfigError(key, "must be a table")
    return cast(dict[str, object], value)


def read_string_table(table: Mapping[str, object], key: str, prefix: str) -> dict[str, str]:
    """A table of strings whose `${NAME}` references are well formed (resolved later)."""
    values = read_table(table.get(key, {}), f"{prefix}.{key}")
    for name, value in values.items():
        if not isinstance(value, str):
            raise ConfigError(f"{prefix}.{key}.{name}", "must be a string")
        if "${" in REFERENCE.sub("", value):
            raise ConfigError(
                f"{prefix}.{key}.{name}", "a reference must read ${NAME} (letters, digits, _)"
            )
    return cast(dict[str, str], values)


def reject_unknown(table: Mapping[str, object], allowed: set[str], prefix: str) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(f"{prefix}.{key}", "unknown key")


def read_optional_string(table: Mapping[str, object], key: str, prefix: str) -> str | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{prefix}.{key}", "must be a non-empty string")
    return value


def read_string(table: Mapping[str, object], key: str, prefix: str, default: str) -> str:
    value = read_optional_string(table, key, prefix)
    return default if value is None else value


def read_bool(table: Mapping[str, object], key: str, prefix: str) -> bool:
    """A TOML boolean; an absent key is false."""
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{prefix}.{key}", "must be true or false")
    return value


def read_positive_int(table: Mapping[str, object], key: str, prefix: str) -> int | None:
    if key not in table:
        return None
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{prefix}.{key}", "must be a positive integer")
    return value


def read_seconds(table: Mapping[str, object], key: str, prefix: str, default: float) -> float:
    if key not in table:
        return default
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{prefix}.{key}", "must be a number of seconds")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"{prefix}.{key}", "must be positive and finite")
    return seconds


def read_list(table: Mapping[str, object], key: str, prefix: str, *, item: type[_T]) -> list[_T]:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{prefix}.{key}", f"must be a list of {item.__name__}")
    items = cast(list[object], value)
    for element in items:
        if not isinstance(element, item) or isinstance(element, bool):
            raise ConfigError(f"{prefix}.{key}", f"must be a list of {item.__name__}")
    return cast(list[_T], items)
