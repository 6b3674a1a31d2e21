"""A child's stderr, owned with the child: always drained, kept bounded, shown only on request.

What a child writes to stderr is text it controls: its own log lines, session ids, tokens it
printed by mistake. Inherited, it lands on this process's stderr, where an agent that runs us
through its shell tool reads it; piped and left unread, it blocks the child once the pipe is
full. So a provider hands its spawn a `ChildStderr` (`open_managed_process(...,
stderr=ChildStderr(...))`) and one task drains the pipe from the spawn until the process block
ends, into a `StderrLog`:

- with a `log_dir`, one file per child (mode 0600, made when the first byte arrives), holding at
  most `max_bytes`: the first half as it arrives — so a log survives even when this process is
  killed — and the newest half, kept in memory and written when the stream ends, behind one
  marker line that says how many bytes between them were left out. A child's start-up error
  and its last words before a crash are both kept;
- without one, nothing: the bytes are read and dropped;
- with `live=True`, also copied as they arrive to this process's stderr, for a person at a
  terminal who asked to see it (never the default: the text is the child's).

Nothing here raises into a run: a log that cannot be made or written is given up (the bytes
are still drained), a live stream that fails is no longer written.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Final, cast

import anyio
import anyio.abc

from ._owned_task import OwnedTask
from ._pipe_reader import drain_ended

_log = logging.getLogger("subagent_core")

DEFAULT_CHILD_STDERR_BYTES: Final = 256 * 1024
"""Most bytes of one child's stderr its log keeps: a few thousand log lines, far below a
disk worth worrying about even for many runs."""

_READ_BYTES: Final = 64 * 1024
_FINISH_SECONDS: Final = 1.0
"""Longest wait, once the tree is gone, for the rest of its stderr to arrive: the writers are
gone, so it is there at once unless it travels through a relay (a Ray placement)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildStderr:
    """Where a child's stderr goes: drained always, into a bounded log or nowhere, never
    inherited. The default drops it.

    Raises:
        ValueError: a value is of the wrong type or out of range (the message names it).
    """

    log_dir: Path | None = None
    """Directory for one log file per child (made, mode 0700, when the first byte arrives);
    `None` drops what the child writes."""
    max_bytes: int = DEFAULT_CHILD_STDERR_BYTES
    """Most bytes one log file keeps (the first and the newest half, with a marker between)."""
    live: bool = False
    """Also copy it as it arrives to this process's stderr: for a person at a terminal only."""

    def __post_init__(self) -> None:
        log_dir = cast(object, self.log_dir)
        if isinstance(log_dir, str):
            object.__setattr__(self, "log_dir", Path(log_dir))
        elif log_dir is not None and not isinstance(log_dir, Path):
            raise ValueError("ChildStderr.log_dir must be a path or None")
        max_bytes = cast(object, self.max_bytes)
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 2:
            raise ValueError("ChildStderr.max_bytes must be an int of 2 or more")
        if not isinstance(self.live, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError("ChildStderr.live must be True or False")

    def open_log(self, *, live_to: IO[bytes] | None = None) -> StderrLog:
        """A sink for one child's stderr (nothing is made on disk until a byte arrives).

        `live_to` replaces this process's stderr as the live copy's destination (tests, a
        host's own console); it is used only when `live` is set.
        """
        if self.live and live_to is None:
            live_to = getattr(sys.stderr, "buffer", None)
        return StderrLog(self.log_dir, self.max_bytes, live_to if self.live else None)


class StderrLog:
    """One child's stderr as it arrives: a bounded file (or nothing) and an optional live copy.

    In memory it holds at most half of `max_bytes` plus one read. `write` and `close` never
    raise; after `close` further writes are ignored.
    """

    def __init__(self, log_dir: Path | None, max_bytes: int, live_to: IO[bytes] | None) -> None:
        self._dir = log_dir
        self._tail_limit = max_bytes // 2
        self._head_room = max_bytes - self._tail_limit
        self._live = live_to
        self._file: IO[bytes] | None = None
        self._path: Path | None = None
        self._failed = log_dir is None
        self._tail = bytearray()
        self._left_out = 0
        self._received = 0
        self._closed = False

    @property
    def path(self) -> Path | None:
        """The log file, once the first byte made it; `None` while there is none."""
        return self._path

    @property
    def received(self) -> int:
        """Bytes written to this log so far (kept or not)."""
        return self._received

    def write(self, data: bytes) -> None:
        """Takes the next bytes the child wrote."""
        if self._closed or not data:
            return
        self._received += len(data)
        self._copy_live(data)
        if self._failed:
            return
        if self._head_room > 0:
            head, data = data[: self._head_room], data[self._head_room :]
            self._head_room -= len(head)
            self._append(head)
        if data:
            self._tail += data
            excess = len(self._tail) - self._tail_limit
            if excess > 0:
                del self._tail[:excess]
                self._left_out += excess

    def close(self) -> None:
        """Writes the kept newest part behind its marker and closes the file."""
        if self._closed:
            return
        self._closed = True
        if self._tail and not self._failed:
            if self._left_out:
                self._append(f"\n[... {self._left_out} bytes left out ...]\n".encode("ascii"))
            self._append(bytes(self._tail))
        self._tail = bytearray()
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None

    def _append(self, data: bytes) -> None:
        try:
            if self._file is None:
                self._file = self._create()
            self._file.write(data)
            self._file.flush()
        except (OSError, ValueError):
            # The disk is full or the directory is not ours to write: drain on, keep nothing.
            _log.warning("a child's stderr log could not be written; the rest is dropped")
            self._give_up()

    def _create(self) -> IO[bytes]:
        assert self._dir is not None
        self._dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        path = self._dir / f"{stamp}-{secrets.token_hex(4)}.log"
        cloexec: int = getattr(os, "O_CLOEXEC", 0)  # POSIX; Windows handles are not inherited
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | cloexec, 0o600)
        self._path = path
        return os.fdopen(fd, "wb")

    def _give_up(self) -> None:
        self._failed = True
        self._tail = bytearray()
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None

    def _copy_live(self, data: bytes) -> None:
        if self._live is None:
            return
        try:
            self._live.write(data)
            self._live.flush()
        except (OSError, ValueError):
            self._live = None


async def drain_stderr(stream: anyio.abc.ByteReceiveStream, log: StderrLog) -> None:
    """Reads `stream` into `log` until it ends; a closed or broken pipe ends it quietly.

    For an owner that drains in its own task group; `open_managed_process(...,
    stderr=ChildStderr(...))` runs this itself for the life of the process block.
    """
    while True:
        try:
            data = await stream.receive(_READ_BYTES)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        except OSError:
            return
        log.write(data)


class StderrDrain:
    """The task draining one child's stderr, owned by the block that owns the child."""

    __slots__ = ("_log", "_stream", "_task")

    def __init__(
        self, stream: anyio.abc.ByteReceiveStream | None, log: StderrLog, task: OwnedTask | None
    ) -> None:
        self._stream = stream
        self._log = log
        self._task = task

    @classmethod
    def start(cls, stream: anyio.abc.ByteReceiveStream | None, log: StderrLog) -> StderrDrain:
        """Starts draining `stream` (nothing to drain when it is `None`); never waits."""
        if stream is None:
            return cls(None, log, None)
        task = OwnedTask.start(lambda: drain_stderr(stream, log), name="child stderr")
        return cls(stream, log, task)

    async def aclose(self, *, writers_gone: bool) -> None:
        """Ends the drain and closes the log, before the process block releases the pipe.

        With `writers_gone` (the tree is gone), what the pipe still holds is read first, so a
        crashing child's last line is kept. Shielded and bounded.
        """
        with anyio.CancelScope(shield=True):
            task = self._task
            if task is not None:
                if writers_gone:
                    drain_ended(self._stream, self._log.write)
                    with anyio.move_on_after(_FINISH_SECONDS):
                        await task.wait()
                task.cancel()
                await task.wait()
            self._log.close()
