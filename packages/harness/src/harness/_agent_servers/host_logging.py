"""Host-side logs of the stdio servers: quiet by default, `--verbose` and `--log-file` on demand.

stdout carries the protocol, so logs go to stderr or a file. These logs are for the person
running the host: they may hold raw causes (exception text, the agent's failure reason),
which never reach the model or a diagnostic.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_host_logging(*, verbose: bool, log_file: Path | None) -> None:
    """stderr at WARNING (DEBUG with `verbose`); `log_file`, when given, at DEBUG."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(logging.DEBUG if verbose else logging.WARNING)
    stderr.setFormatter(logging.Formatter(_FORMAT))
    root.addHandler(stderr)
    if log_file is not None:
        file = logging.FileHandler(log_file, encoding="utf-8")
        file.setLevel(logging.DEBUG)
        file.setFormatter(logging.Formatter(_FORMAT))
        root.addHandler(file)
    root.setLevel(logging.DEBUG if verbose or log_file is not None else logging.WARNING)
    # Third-party chatter (HTTP connection pools) stays out unless asked for.
    for name in ("httpx", "httpcore", "asyncio"):
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.WARNING)
