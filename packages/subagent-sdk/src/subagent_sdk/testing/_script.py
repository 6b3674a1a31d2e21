"""The fake runtime's scenario: one JSON object, every key optional."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final, cast

from subagent_sdk.wire import JSONValue

SCRIPT_ENV: Final = "FAKE_SDK_SCRIPT"
"""Inline JSON scenario."""
SCRIPT_FILE_ENV: Final = "FAKE_SDK_SCRIPT_FILE"
"""Path of a JSON scenario file."""

_SHARED_HANG_AT: Final = {"handshake": "initialize", "turn": "deltas"}
"""The conformance suite's `hang_at` values in this fake's terms."""

_NOISE_KINDS: Final = frozenset(
    {"garbage", "non-utf8", "unknown-ids", "huge-line", "foreign-sessions", "requests", "split"}
)


def _no_names() -> list[str]:
    return []


def _no_tools() -> list[dict[str, Any]]:
    return []


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeScript:
    """What the fake runtime does; see the package README for each knob."""

    text: str = "hello from the fake runtime"
    deltas: int = 1
    final_message: bool = True
    empty_final_message: bool = False
    turn_end: JSONValue = field(default_factory=lambda: {"kind": "completed"})
    omit_turn_end: bool = False
    echo_cwd: bool = False
    echo_env: list[str] = field(default_factory=_no_names)
    echo_identity: bool = False
    echo_prompt: bool = False
    record_initialize: str | None = None
    initialize_error: dict[str, Any] | None = None
    initialize_result: JSONValue = None
    prompt_error: dict[str, Any] | None = None
    prompt_result: JSONValue = None
    malformed_event: bool = False
    malformed_message: bool = False
    hang_at: str | None = None
    ready_file: str | None = None
    go_file: str | None = None
    stream_before_receipt: str | None = None
    stream_after_turn_end: str | None = None
    reasoning: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=_no_tools)
    stderr: str | None = None
    exit_before_initialize: int | None = None
    exit_during_prompt: int | None = None
    signal_during_prompt: str | None = None
    ignore_eof: bool = False
    ignore_shutdown: bool = False
    trap_sigterm: bool = False
    subagent: dict[str, Any] | None = None
    noise: list[str] = field(default_factory=_no_names)
    noise_at: str = "initialize"
    huge_line_bytes: int = 5_000_000
    keepalive: dict[str, Any] | None = None
    # The shared knobs of `subagent_core.testing.conformance` (`hang_at` takes its
    # `handshake` and `turn` too).
    exit_code: int | None = None
    trap_term: bool = False
    grandchild_holds_stdout: bool = False
    setsid_escapee: bool = False
    flood: int = 0

    @classmethod
    def from_json(cls, value: object) -> FakeScript:
        """Builds a script from a JSON object; unknown keys are refused (typos fail loudly).

        Raises:
            ValueError: not an object, an unknown key, or a bad value.
        """
        if not isinstance(value, dict):
            raise ValueError("the fake SDK runtime script must be a JSON object")
        data = cast(dict[str, Any], value)
        known = {item.name for item in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown fake SDK runtime script keys: {', '.join(unknown)}")
        script = cls(**data)  # pyright: ignore[reportArgumentType]
        if script.hang_at in _SHARED_HANG_AT:
            script = replace(script, hang_at=_SHARED_HANG_AT[script.hang_at])
        if script.hang_at not in (None, "initialize", "prompt", "deltas"):
            raise ValueError("hang_at must be initialize, prompt, deltas, handshake or turn")
        name = script.signal_during_prompt
        if name is not None and not isinstance(getattr(signal, name, None), signal.Signals):
            raise ValueError("signal_during_prompt must be a signal name such as SIGKILL")
        if script.noise_at not in ("initialize", "prompt"):
            raise ValueError("noise_at must be initialize or prompt")
        bad_noise = sorted(set(script.noise) - _NOISE_KINDS)
        if bad_noise:
            raise ValueError(f"unknown noise kinds: {', '.join(bad_noise)}")
        return script

    def to_json(self) -> str:
        """The script as JSON text (only the knobs that differ from the defaults)."""
        default = FakeScript()
        data: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if value != getattr(default, item.name):
                data[item.name] = value
        return json.dumps(data)


def load_script(argv: list[str], environ: dict[str, str] | None = None) -> FakeScript:
    """The scenario from `--json TEXT`, `--script PATH`, `$FAKE_SDK_SCRIPT` or
    `$FAKE_SDK_SCRIPT_FILE` (first found); the defaults when none is given.

    Raises:
        ValueError: bad arguments or a bad script.
    """
    env = dict(os.environ) if environ is None else environ
    text: str | None = None
    args = list(argv)
    while args:
        flag = args.pop(0)
        if flag in ("--json", "--script") and args:
            value = args.pop(0)
            if flag == "--json":
                text = value
            else:
                with open(value, encoding="utf-8") as handle:
                    text = handle.read()
        else:
            raise ValueError(f"unexpected argument: {flag}")
    if text is None and env.get(SCRIPT_ENV):
        text = env[SCRIPT_ENV]
    if text is None and env.get(SCRIPT_FILE_ENV):
        with open(env[SCRIPT_FILE_ENV], encoding="utf-8") as handle:
            text = handle.read()
    if text is None:
        return FakeScript()
    return FakeScript.from_json(json.loads(text))
