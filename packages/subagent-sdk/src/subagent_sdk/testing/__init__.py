"""The scripted fake SDK runtime, for testing hosts of the SDK protocol.

Run it as `python -m subagent_sdk.testing [--json TEXT | --script PATH]` (or `harness
fake-sdk-runtime`); the scenario may also come from `$FAKE_SDK_SCRIPT` (JSON) or
`$FAKE_SDK_SCRIPT_FILE`. Every knob is a key of `FakeScript`, documented in the README.
"""

from __future__ import annotations

import sys

from ._fake import main as main
from ._script import SCRIPT_ENV as SCRIPT_ENV
from ._script import SCRIPT_FILE_ENV as SCRIPT_FILE_ENV
from ._script import FakeScript as FakeScript


def fake_runtime_argv(script: FakeScript | None = None) -> list[str]:
    """argv that starts the fake runtime with `script` under this Python."""
    argv = [sys.executable, "-m", "subagent_sdk.testing"]
    if script is not None:
        argv += ["--json", script.to_json()]
    return argv


__all__ = ["SCRIPT_ENV", "SCRIPT_FILE_ENV", "FakeScript", "fake_runtime_argv", "main"]
