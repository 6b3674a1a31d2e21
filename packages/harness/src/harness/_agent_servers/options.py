"""Options shared by the stdio servers (`acp-agent`, `sdk-runtime`): state and host logs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

StateDirOption = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        envvar="HARNESS_STATE_DIR",
        help=(
            "Where sessions are kept so a restarted server continues them "
            "(default: the user's XDG state directory, e.g. ~/.local/state/harness)."
        ),
        file_okay=False,
    ),
]
VerboseOption = Annotated[
    bool,
    typer.Option("--verbose", "-v", help="Host logs at debug level on stderr (never stdout)."),
]
LogFileOption = Annotated[
    Path | None,
    typer.Option(
        "--log-file", help="Also write host logs (debug level) to this file.", dir_okay=False
    ),
]


def prepare_server(*, state_dir: Path | None, verbose: bool, log_file: Path | None) -> Path:
    """Configures host logging and returns the state directory to use."""
    from .host_logging import configure_host_logging
    from .session_store import default_state_dir

    configure_host_logging(verbose=verbose, log_file=log_file)
    return (state_dir or default_state_dir()).expanduser().resolve()
