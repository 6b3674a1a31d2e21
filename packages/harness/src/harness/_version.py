"""The harness version, reported by `--version` and by `acp-agent`/`sdk-runtime` handshakes."""

from __future__ import annotations

VERSION = "0.1.0"
DISTRIBUTION = "subagent-harness"


def installed_version() -> str:
    """The installed distribution's version (the source's `VERSION` when run uninstalled)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return VERSION
