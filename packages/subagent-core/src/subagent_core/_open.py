"""`open_managed_process`: the one way every caller starts a child, here or placed elsewhere.

An argv runs on this host (`_process.open_local`); a `ChildCommand` with a `remote` placement
is opened by that placement (`_placement.Placement`), which hands back the same
`ManagedProcess` shape, so no caller knows where its child runs.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO

from ._command import ChildCommand
from ._process import (
    DEFAULT_EOF_GRACE_SECONDS,
    DEFAULT_KILL_GRACE_SECONDS,
    DEFAULT_TERM_GRACE_SECONDS,
    ManagedProcess,
    StderrMode,
    StdinMode,
    StdoutMode,
    open_local,
)


@asynccontextmanager
async def open_managed_process(
    argv: Sequence[str] | ChildCommand,
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: StdinMode = "pipe",
    stdout: StdoutMode = "pipe",
    stderr: StderrMode | int | IO[bytes] = "inherit",
    eof_grace_seconds: float = DEFAULT_EOF_GRACE_SECONDS,
    term_grace_seconds: float = DEFAULT_TERM_GRACE_SECONDS,
    kill_grace_seconds: float = DEFAULT_KILL_GRACE_SECONDS,
) -> AsyncGenerator[ManagedProcess]:
    """Starts a child in its own session and owns it until the whole tree is gone.

    `argv` is an argv list or a `ChildCommand` (its env is laid over the scrubbed inherited
    environment and its cwd is used; explicit `env=`/`cwd=` arguments win). A command with a
    `remote` placement is opened by that placement (then its own env and cwd apply where it
    runs). Leaving the block runs the ladder with the given graces (shielded; a no-op when
    `terminate` already confirmed the tree gone) and closes the pipes. A cancel that lands
    while the child is being started still ends its whole tree before it propagates.

    Raises:
        SpawnError: missing program, not executable, or bad cwd; raised before anything runs.
    """
    graces = {
        "eof_grace_seconds": eof_grace_seconds,
        "term_grace_seconds": term_grace_seconds,
        "kill_grace_seconds": kill_grace_seconds,
    }
    if isinstance(argv, ChildCommand):
        if argv.remote is not None:
            async with argv.remote.open(
                argv.argv,
                env=argv.env,
                cwd=argv.cwd,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                **graces,
            ) as placed:
                yield placed
            return
        cwd = argv.cwd if cwd is None else cwd
        env = argv.environment() if env is None else env
        argv = argv.argv
    async with open_local(
        argv, cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr, **graces
    ) as managed:
        yield managed
