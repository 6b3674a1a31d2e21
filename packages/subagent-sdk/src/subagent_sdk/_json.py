"""JSON values as they cross the wire, and the one compact encoding frames use."""

from __future__ import annotations

import json
from typing import TypeAlias, cast

JSONValue: TypeAlias = "bool | int | float | str | list[JSONValue] | dict[str, JSONValue] | None"
"""Any value `json.loads` can return."""

JSONObject: TypeAlias = "dict[str, JSONValue]"
"""A JSON object; `params`, results and event envelopes are objects."""


def _reject_constant(name: str) -> JSONValue:
    # NaN and Infinity are not JSON; a line carrying them is garbage like any other.
    raise ValueError(name)


def loads(text: str) -> JSONValue:
    """Parses one JSON text strictly (no NaN/Infinity).

    Raises:
        ValueError: not JSON (`json.JSONDecodeError` is a `ValueError`).
    """
    return cast(JSONValue, json.loads(text, parse_constant=_reject_constant))


def dumps(value: JSONValue) -> str:
    """Compact JSON (no spaces) with non-ASCII text kept as UTF-8, as the runtime writes it."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate cannot be UTF-8: escape it, as JSON.stringify does.
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return text


def as_object(value: JSONValue) -> JSONObject | None:
    """The value when it is a JSON object, else `None`."""
    return cast(JSONObject, value) if isinstance(value, dict) else None
