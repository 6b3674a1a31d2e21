"""Structured output: what the endpoint is asked for, and how an answer is judged.

The endpoint is asked for JSON with `response_format` (`json_schema`, the OpenAI shape: the
service constrains decoding where it can). The answer is still checked here with `jsonschema`
(through subagent-core's `parse_structured_output`): a service may ignore the request or only
support plain JSON mode. A non-validating answer gets one more model round with a fixed
correction; a second failure ends the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from subagent_core.kit import StructuredOutputError, parse_structured_output

SCHEMA_NAME = "output"
"""The `json_schema.name` sent: the OpenAI shape requires one."""

RETRY_INSTRUCTION = (
    "Your previous answer was not JSON that validates against the required output schema. "
    "Answer again with only the JSON value, nothing else."
)
"""The user message of the one retry (fixed text: the validator's report is not sent)."""


def response_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The request's `response_format` for `schema`."""
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": dict(schema)}}


def parsed_answer(schema: Mapping[str, Any], text: str) -> tuple[bool, object]:
    """(True, value) when `text` is JSON that validates against `schema`, else (False, None)."""
    try:
        return True, parse_structured_output(schema, text)
    except StructuredOutputError:
        return False, None
