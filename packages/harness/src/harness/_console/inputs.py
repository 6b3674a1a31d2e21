"""What a command reads besides its options: the prompt (or stdin for `-`) and a schema file.

Each refusal is a `UsageError`, one line and exit 2, naming the option and never the content.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, cast

from .exit_codes import UsageError


def read_prompt(prompt: str) -> str:
    """`prompt`, or standard input when it is `-`.

    Raises:
        UsageError: the prompt is empty (after reading stdin, for `-`).
    """
    text = sys.stdin.read() if prompt == "-" else prompt
    if not text.strip():
        raise UsageError("the prompt is empty" + (" (nothing on stdin)" if prompt == "-" else ""))
    return text


def read_schema(path: Path) -> dict[str, Any]:
    """The JSON Schema object in `path` (`--output-schema`).

    Raises:
        UsageError: the file cannot be read, is not JSON, or is not a JSON object.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise UsageError(f"--output-schema: cannot read {path}") from None
    try:
        schema = cast(object, json.loads(text))
    except ValueError:
        raise UsageError(f"--output-schema: {path} is not JSON") from None
    if not isinstance(schema, dict):
        raise UsageError(f"--output-schema: {path} is not a JSON object (a JSON Schema)")
    return cast(dict[str, Any], schema)
