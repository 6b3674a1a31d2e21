"""Host-side logs of the stdio servers: quiet by default, `--verbose` and `--log-file` on demand.

`prepare_server` is what both servers do before they serve: logs set up, state directory
chosen (`--state-dir`, `HARNESS_STATE_DIR`, else the user's XDG state directory).

stdout carries the protocol, so logs go to stderr or a file. These logs are for the person
running the host: they may hold raw causes (exception text, the agent's failure reason),
which never reach the model or a diagnostic.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from harness._config.paths import default_state_dir

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


def prepare_server(*, state_dir: Path | None, verbose: bool, log_file: Path | None) -> Path:
    """Configures host logging and returns the state directory to use."""
    configure_host_logging(verbose=verbose, log_file=log_file)
    return (state_dir or default_state_dir()).expanduser().resolve()
