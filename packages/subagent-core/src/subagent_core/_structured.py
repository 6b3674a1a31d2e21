"""Structured output and reported cost: turning child-written values into checked ones.

`parse_structured_output` is the one check every provider that honours `output_schema` runs on
the final answer: it must be JSON, and it must validate against the schema. Validation uses
`jsonschema` when it is importable (the direct-model agent depends on it); without it only the
JSON parse and the schema's top-level `type` are checked, and the provider relies on its child
having enforced the schema (Claude Code and Codex both do, server-side).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final, cast

from ._types import Cost

_JSON_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


class StructuredOutputError(ValueError):
    """The child's answer is not JSON that validates against the schema.

    The message is fixed text: it never carries the answer or the validator's report (both
    hold child-written text).
    """


def parse_structured_output(schema: Mapping[str, Any], text: str) -> object:
    """The parsed value of `text` when it validates against `schema`.

    Raises:
        StructuredOutputError: not JSON, or not valid against the schema.
    """
    try:
        value = cast(object, json.loads(text))
    except ValueError:
        raise StructuredOutputError("the answer is not JSON") from None
    try:
        import jsonschema  # optional: only some providers depend on it
    except ImportError:
        _check_top_level_type(schema, value)
        return value
    try:
        jsonschema.validate(value, dict(schema))
    except jsonschema.ValidationError:
        raise StructuredOutputError("the answer does not validate against the schema") from None
    except jsonschema.SchemaError:
        raise StructuredOutputError("the schema is not a valid JSON Schema") from None
    return value


def _check_top_level_type(schema: Mapping[str, Any], value: object) -> None:
    expected = schema.get("type")
    names = [expected] if isinstance(expected, str) else expected
    if not isinstance(names, list):
        return
    for name in cast(list[object], names):
        types = _JSON_TYPES.get(name) if isinstance(name, str) else None
        if types is None:
            return  # a type this fallback does not know: accept
        if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
            return
    raise StructuredOutputError("the answer does not validate against the schema")


def safe_cost(amount: object, currency: object) -> Cost | None:
    """A `Cost` from reported values, or `None` when they are not a valid cost (never raises)."""
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        return None
    if not math.isfinite(amount) or amount < 0 or not isinstance(currency, str):
        return None
    try:
        return Cost(float(amount), currency)
    except ValueError:
        return None
