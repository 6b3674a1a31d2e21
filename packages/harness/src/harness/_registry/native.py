"""Whether a native provider's package (`subagent-claude`, `subagent-codex`) can be imported.

`harness agents` asks, so a trimmed install (a wheel built without them) reports the row "not
installed" with the pip command instead of failing to list anything.
"""

from __future__ import annotations

import importlib.util

from harness._config.presets import NATIVE_PACKAGES


def native_installed(kind: str) -> bool:
    """Whether the provider package for `kind` can be imported."""
    return importlib.util.find_spec(NATIVE_PACKAGES[kind][0]) is not None
