"""The fake CLI's scenario: a JSON object of known knobs, with the conformance suite's shared
knobs read in the fake's own terms. Standard library only (the fake starts in milliseconds)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

SCRIPT_ENV = "CLAUDE_FAKE_SCRIPT"
"""Environment variable holding the scenario as a JSON object."""

KNOBS = frozenset(
    {
        "text",
        "chunks",
        "thinking",
        "result",
        "assistant_error",
        "api_retry_status",
        "tool",
        "replay",
        "hang_at",
        "ignore_interrupt",
        "permission_storm",
        "unknown_control",
        "flood_frames",
        "garbage",
        "huge_frame_bytes",
        "die_mid_frame",
        "exit_code",
        "ignore_eof",
        "trap_sigterm",
        "grandchild",
        "pid_file",
        "record_file",
        "echo_env",
        "echo_prompt",
        "structured_output",
        "refuse_initialize",
        "trap_term",
        "grandchild_holds_stdout",
        "setsid_escapee",
        "flood",
        "turns",
        "cost",
        "transcripts",
        "session_id",
    }
)
"""Every knob a scenario (or one of its `turns`) may set."""


class ScriptError(ValueError):
    """The scenario is not a JSON object of known knobs."""


def load_script(environ: Mapping[str, str]) -> dict[str, Any]:
    """The scenario from `CLAUDE_FAKE_SCRIPT` (empty: answer `PONG`).

    The shared `hang_at` `handshake` is `initialize`; `turn` is `prompt` on the first turn
    only (an overlay of `turns`), so a session's later turns answer.

    Raises:
        ScriptError: not a JSON object, or an unknown knob (in the scenario or a turn).
    """
    raw = environ.get(SCRIPT_ENV)
    script: object = json.loads(raw) if raw else {}
    if not isinstance(script, dict):
        raise ScriptError("the script must be a JSON object")
    unknown = sorted(
        str(knob) for knob in cast("dict[object, object]", script) if knob not in KNOBS
    )
    if unknown:
        raise ScriptError(f"unknown knobs: {', '.join(unknown)}")
    known = cast("dict[str, Any]", script)
    overlays = cast("list[object]", known.get("turns") or [])
    for overlay in overlays:
        if not isinstance(overlay, dict) or set(cast("dict[str, Any]", overlay)) - KNOBS:
            raise ScriptError("each of turns must be an object of known knobs")
    if known.get("hang_at") == "handshake":
        known["hang_at"] = "initialize"
    elif known.get("hang_at") == "turn":
        del known["hang_at"]
        turns = cast("list[dict[str, Any]]", overlays) or [{}]
        known["turns"] = [{"hang_at": "prompt", **turns[0]}, *turns[1:]]
    if known.get("trap_term"):
        known["trap_sigterm"] = True
    return known
