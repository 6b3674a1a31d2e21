"""`open_managed_process`: the one way every caller starts a child, here or placed elsewhere.

An argv runs on this host (`_process.open_local`); a `ChildCommand` with a `remote` placement
is opened by that placement (`_placement.Placement`), which hands back the same
`ManagedProcess` shape, so no caller knows where its child runs.

`stderr=ChildStderr(...)` gives the child a pipe that this block drains for its whole life
(`_stderr_log`): the drain starts with the block and ends after the ladder, before the pipe is
released, so a child's last words reach its log and a flood never blocks it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
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
from ._stderr_log import ChildStderr, StderrDrain
from ._teardown import Teardown


@asynccontextmanager
async def open_managed_process(
    argv: Sequence[str] | ChildCommand,
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: StdinMode = "pipe",
    stdout: StdoutMode = "pipe",
    stderr: StderrMode | int | IO[bytes] | ChildStderr = "inherit",
    eof_grace_seconds: float = DEFAULT_EOF_GRACE_SECONDS,
    term_grace_seconds: float = DEFAULT_TERM_GRACE_SECONDS,
    kill_grace_seconds: float = DEFAULT_KILL_GRACE_SECONDS,
    teardown: Teardown | None = None,
) -> AsyncGenerator[ManagedProcess]:
    """Starts a child in its own session and owns it until the whole tree is gone.

    `argv` is an argv list or a `ChildCommand` (its env is laid over the scrubbed inherited
    environment and its cwd is used; explicit `env=`/`cwd=` arguments win). A command with a
    `remote` placement is opened by that placement (then its own env and cwd apply where it
    runs). Leaving the block runs the ladder with the given graces, or `teardown`'s when given
    (shielded; a no-op when `terminate` already confirmed the tree gone) and closes the pipes.
    A cancel that lands while the child is being started still ends its whole tree before it
    propagates.

    `stderr` is a mode, a descriptor or file, or a `ChildStderr`: then the block owns the
    child's stderr pipe (`proc.stderr` is not the caller's to read) and drains it into a
    bounded log, or nowhere, until the process is gone.

    Raises:
        SpawnError: missing program, not executable, or bad cwd; raised before anything runs.
    """
    if teardown is not None:
        eof_grace_seconds = teardown.eof_grace_seconds
        term_grace_seconds = teardown.term_grace_seconds
        kill_grace_seconds = teardown.kill_grace_seconds
    graces = {
        "eof_grace_seconds": eof_grace_seconds,
        "term_grace_seconds": term_grace_seconds,
        "kill_grace_seconds": kill_grace_seconds,
    }
    sink = stderr if isinstance(stderr, ChildStderr) else None
    mode = "pipe" if isinstance(stderr, ChildStderr) else stderr
    opened: AbstractAsyncContextManager[ManagedProcess]
    if isinstance(argv, ChildCommand) and argv.remote is not None:
        opened = argv.remote.open(
            argv.argv,
            env=argv.env,
            cwd=argv.cwd,
            stdin=stdin,
            stdout=stdout,
            stderr=mode,
            **graces,
        )
    else:
        if isinstance(argv, ChildCommand):
            cwd = argv.cwd if cwd is None else cwd
            env = argv.environment() if env is None else env
            argv = argv.argv
        opened = open_local(
            argv, cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=mode, **graces
        )
    async with opened as managed:
        if sink is None:
            yield managed
            return
        # No await between the spawn and the drain: from here the pipe is always read.
        drain = StderrDrain.start(managed.stderr, sink.open_log())
        try:
            yield managed
        finally:
            # The ladder runs here rather than on leaving `opened` (where it is then a no-op),
            # so the drain can take the pipe's last bytes before the pipe is released.
            gone = await managed.terminate(**graces)
            await drain.aclose(writers_gone=gone)
