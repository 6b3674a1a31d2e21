"""Test support: a loopback Responses stub for the real binary, and a fake app-server.

- `open_responses_stub(steps)` serves a scripted Responses API on `127.0.0.1`;
  `stub_provider_overrides(base_url)` points a `CodexConfig` at it (keyless: the key is a
  dummy in `CodexConfig.env[STUB_KEY_ENV]`).
- `python -m subagent_codex.testing` is a stdlib fake `codex app-server` following a scenario
  (`fake_app_server_argv()`, `scenario_env(scenario)`; `_script` describes every knob), for
  the hostile cases a real binary cannot be made to show.

This package imports only the standard library.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping

from ._responses_stub import STUB_KEY_ENV as STUB_KEY_ENV
from ._responses_stub import STUB_MODEL as STUB_MODEL
from ._responses_stub import ResponsesStub as ResponsesStub
from ._responses_stub import open_responses_stub as open_responses_stub
from ._responses_stub import stub_provider_overrides as stub_provider_overrides
from ._script import SCENARIO_ENV as SCENARIO_ENV

__all__ = [
    "SCENARIO_ENV",
    "STUB_KEY_ENV",
    "STUB_MODEL",
    "ResponsesStub",
    "fake_app_server_argv",
    "open_responses_stub",
    "scenario_env",
    "stub_provider_overrides",
]


def fake_app_server_argv() -> list[str]:
    """argv that starts the fake app-server with this interpreter (`CodexConfig.command`
    and `.args`; the provider appends `app-server --listen stdio://`, which it ignores)."""
    return [sys.executable, "-m", "subagent_codex.testing"]


def scenario_env(scenario: Mapping[str, object]) -> dict[str, str]:
    """The environment entry that hands `scenario` to the fake (for `CodexConfig.env`)."""
    return {SCENARIO_ENV: json.dumps(dict(scenario))}
