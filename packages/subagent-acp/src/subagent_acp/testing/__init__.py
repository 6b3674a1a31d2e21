"""Test support: the scripted fake ACP child (a real ACP agent process).

Run it as `python -m subagent_acp.testing` (the harness exposes it as `harness fake-acp-child`).
The scenario is a JSON object of knobs given by `--script FILE`, `--script-json TEXT`, the
`ACP_FAKE_SCRIPT` (inline JSON) or `ACP_FAKE_SCRIPT_FILE` (path) environment variables, with
single knobs overridable as `ACP_FAKE_<KNOB>`; see the package README for every knob.

This module imports only the standard library, so the child starts fast.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping

from ._fake import run_fake_child
from ._script import KNOB_ENV_PREFIX as KNOB_ENV_PREFIX
from ._script import KNOBS as KNOBS
from ._script import SCRIPT_ENV as SCRIPT_ENV
from ._script import SCRIPT_FILE_ENV as SCRIPT_FILE_ENV

__all__ = [
    "KNOBS",
    "KNOB_ENV_PREFIX",
    "SCRIPT_ENV",
    "SCRIPT_FILE_ENV",
    "fake_child_argv",
    "main",
    "script_env",
]


def main(argv: list[str] | None = None) -> int:
    """Serves ACP on stdio following the scenario; returns the process exit code.

    `argv` is the argument tail (`--script FILE` / `--script-json TEXT`); `None` reads
    `sys.argv[1:]`.
    """
    return run_fake_child(argv)


def fake_child_argv() -> list[str]:
    """argv that starts the fake child with this interpreter."""
    return [sys.executable, "-m", "subagent_acp.testing"]


def script_env(script: Mapping[str, object]) -> dict[str, str]:
    """The environment entry that hands `script` to the fake child (for `ACPConfig.env`)."""
    return {SCRIPT_ENV: json.dumps(dict(script))}
