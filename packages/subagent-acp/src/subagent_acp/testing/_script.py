"""The fake ACP agent's script language: the knobs a scenario may set and how one is loaded.

This module is what a test writes (a JSON object of known knobs, from `--script`,
`--script-json`, `ACP_FAKE_SCRIPT[_FILE]` or `ACP_FAKE_<KNOB>`) and the small readers the
server loop uses to take it apart without trusting its shape; `_fake` is the server loop
that plays it and `_stored_sessions` the sessions it keeps. Standard library only, like
the child itself.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any, cast

SCRIPT_ENV = "ACP_FAKE_SCRIPT"
"""Environment variable holding the whole scenario as a JSON object."""
SCRIPT_FILE_ENV = "ACP_FAKE_SCRIPT_FILE"
"""Environment variable naming a file that holds the scenario as a JSON object."""
KNOB_ENV_PREFIX = "ACP_FAKE_"
"""`ACP_FAKE_<KNOB>` sets one knob (value parsed as JSON, else taken as a string)."""


KNOBS = frozenset(
    {
        "text",
        "chunks",
        "stop_reason",
        "session_id",
        "omit_session_id",
        "results",
        "permission",
        "thought",
        "tool_call",
        "plan",
        "image_chunk",
        "echo_cwd",
        "echo_session_cwd",
        "echo_env",
        "probe_requests",
        "hang_at",
        "ignore_cancel",
        "crash",
        "error",
        "ignore_eof",
        "trap_sigterm",
        "eof_marker",
        "markers",
        "stderr",
        "inject",
        "huge_chunk_bytes",
        "grandchild",
        "grandchild_setsid",
        "close_stdin_at",
        "close_stdout",
        "gate_file",
        "record_file",
        "traceparent_file",
        "flood_requests",
        "stream_bytes",
        "text_after_end",
        "duplicate_answers",
        "updates",
        "usage",
        "fs_ops",
        "terminal",
        "concurrent_permissions",
        "echo_pid",
        "keepalive",
        # Sessions: several turns, and sessions another process reopens (`_stored_sessions`).
        "turns",
        "echo_history",
        "echo_prompt",
        "state_dir",
        "sessions",
        # The shared knobs of `subagent_core.testing.conformance`, in this fake's own terms
        # where it had them already (`shared_knobs`).
        "exit_code",
        "trap_term",
        "grandchild_holds_stdout",
        "setsid_escapee",
        "flood",
    }
)

_SHARED_HANG_AT = {"handshake": "initialize", "turn": "prompt"}

Message = dict[str, Any]
Flow = Generator[int, Message, None]
"""A prompt's work: yields the id of a request it sent, receives the client's answer."""


class ScriptError(ValueError):
    """The scenario is not a JSON object of known knobs."""


def load_script(argv: list[str], environ: Mapping[str, str]) -> dict[str, Any]:
    """Builds the scenario: `--script FILE` or `--script-json TEXT`, else `ACP_FAKE_SCRIPT` /
    `ACP_FAKE_SCRIPT_FILE`, then `ACP_FAKE_<KNOB>` variables laid over it."""
    script: dict[str, Any] = {}
    text: str | None = None
    args = list(argv)
    while args:
        flag = args.pop(0)
        if flag in ("--script", "--script-json") and args:
            value = args.pop(0)
            text = Path(value).read_text("utf-8") if flag == "--script" else value
        else:
            raise ScriptError(f"unknown argument {flag!r}")
    if text is None and environ.get(SCRIPT_FILE_ENV):
        text = Path(environ[SCRIPT_FILE_ENV]).read_text("utf-8")
    if text is None and environ.get(SCRIPT_ENV):
        text = environ[SCRIPT_ENV]
    if text is not None:
        loaded: object = json.loads(text)
        if not isinstance(loaded, dict):
            raise ScriptError("the script must be a JSON object")
        script.update(loaded)  # pyright: ignore[reportUnknownArgumentType]
    for name, raw in environ.items():
        if not name.startswith(KNOB_ENV_PREFIX) or name in (SCRIPT_ENV, SCRIPT_FILE_ENV):
            continue
        knob = name[len(KNOB_ENV_PREFIX) :].lower()
        try:
            script[knob] = json.loads(raw)
        except ValueError:
            script[knob] = raw
    unknown = sorted(set(script) - KNOBS)
    if unknown:
        raise ScriptError(f"unknown knobs: {', '.join(unknown)}")
    return shared_knobs(script)


def shared_knobs(script: dict[str, Any]) -> dict[str, Any]:
    """Reads the conformance suite's knobs as this fake's own: `hang_at` `handshake` is
    `initialize` and `turn` is `prompt` on the first turn only (later turns answer);
    `exit_code` alone is a crash at `initialize`; `trap_term` is `trap_sigterm`. The rest
    (`grandchild_holds_stdout`, `setsid_escapee`, `flood`, `echo_prompt`) are played as they
    are."""
    hang_at = script.get("hang_at")
    if hang_at == "turn":
        del script["hang_at"]
        turns = as_list(script.get("turns"))
        first = as_dict(turns[0]) if turns else {}
        script["turns"] = [{"hang_at": "prompt", **first}, *(turns[1:] or [first])]
    elif isinstance(hang_at, str) and hang_at in _SHARED_HANG_AT:
        script["hang_at"] = _SHARED_HANG_AT[hang_at]
    if script.get("exit_code") is not None and "crash" not in script:
        script["crash"] = {"at": "initialize", "exit_code": script["exit_code"]}
    if script.get("trap_term"):
        script["trap_sigterm"] = True
    return script


def as_dict(value: object) -> dict[str, Any]:
    """`value` if the script gave an object there, else `{}` (a scenario is not trusted)."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """`value` if the script gave a list there, else `[]`."""
    return cast("list[Any]", value) if isinstance(value, list) else []


def split_text(text: str, count: int) -> list[str]:
    """`text` cut into `count` chunks as even as possible (the `chunks` knob)."""
    count = max(1, count)
    if not text:
        return []
    size, extra = divmod(len(text), count)
    pieces: list[str] = []
    start = 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        if end > start:
            pieces.append(text[start:end])
        start = end
    return pieces


def turn_script(base: Mapping[str, Any], number: int, prompts: list[str]) -> dict[str, Any]:
    """The scenario of the `number`th prompt (from 1) on this process: `turns[number - 1]` (the
    last one repeats) laid over the rest; with `echo_history` its `text` is
    `seen: <every prompt of the session so far, " | "-joined>`; with `echo_prompt` it is the
    prompt itself, answered with usage (its length in input tokens, one output token) unless
    the scenario gives `usage`."""
    script = dict(base)
    turns = as_list(base.get("turns"))
    if turns:
        script.update(as_dict(turns[min(number, len(turns)) - 1]))
    if script.get("echo_history"):
        script["text"] = "seen: " + " | ".join(prompts)
    elif script.get("echo_prompt") and prompts:
        script["text"] = prompts[-1]
        tokens = {"totalTokens": len(prompts[-1]) + 1, "inputTokens": len(prompts[-1])}
        script.setdefault("usage", {**tokens, "outputTokens": 1})
    return script


def prompt_text(params: Mapping[str, Any]) -> str:
    """The text blocks of a `session/prompt`, joined by spaces."""
    blocks = [as_dict(block) for block in as_list(params.get("prompt"))]
    return " ".join(str(block.get("text", "")) for block in blocks if block.get("type") == "text")


def probe_params(session_id: str, method: str) -> Message:
    """Plausible params for a request the fake sends the client (`probe_requests`, floods)."""
    if method.startswith("fs/"):
        return {"sessionId": session_id, "path": "/etc/hostname", "content": "x"}
    if method == "terminal/create":
        return {"sessionId": session_id, "command": "true"}
    return {"sessionId": session_id}


def permission_params(session_id: str, permission: Mapping[str, Any]) -> Message:
    """A `session/request_permission` as the `permission` knob describes it."""
    options = permission.get(
        "options",
        [
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ],
    )
    tool_call: Message = {
        "toolCallId": "call-permission",
        "title": permission.get("title", "run a command"),
        "status": "pending",
        "rawInput": permission.get("raw_input", {"command": "rm -rf /tmp/x"}),
    }
    if "tool_kind" in permission:
        tool_call["kind"] = permission["tool_kind"]
    return {"sessionId": session_id, "toolCall": tool_call, "options": options}
