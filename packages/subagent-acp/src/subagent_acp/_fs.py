"""The client file system a child may use: text files inside the run's workspace only.

Containment is by real path: the request's path must be absolute, and after resolving every
symlink it must lie inside the workspace's real path. The file is then opened without following
a final symlink, and where the OS can say which file an fd is (`/proc/self/fd`), that is checked
again after opening — a child that swaps a path for a symlink between the check and the open
still cannot reach outside. Refusals carry fixed text; the child's path is never echoed.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

import anyio.to_thread

MAX_READ_BYTES: Final = 4 * 1024 * 1024
"""Largest file the child may read (4 MiB): the answer travels as one frame."""

MAX_WRITE_BYTES: Final = 8 * 1024 * 1024
"""Largest content the child may write (8 MiB of UTF-8)."""


class FSRefusal(Exception):
    """A refused file request; the message is fixed text, safe to send back to the child."""

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


OUTSIDE: Final = "path is outside the workspace"
NOT_FOUND: Final = "Resource not found"
"""ACP's own message for `resource_not_found` (-32002): agents match on it (gemini-cli's client
file system treats only "Resource not found", "ENOENT" or "does not exist" as a missing file,
and its write tool reads the target first, so any other words fail every new file)."""
NOT_A_FILE: Final = "path is not a regular file"
TOO_LARGE: Final = "file is too large"
UNREADABLE: Final = "file could not be read"
UNWRITABLE: Final = "file could not be written"

_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
# A FIFO must not park a worker thread: opening never blocks, and only regular files are used.
_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_OPEN_FLAGS: Final = _NOFOLLOW | _CLOEXEC | _NONBLOCK


class WorkspaceFiles:
    """Reads and writes text files confined to `root` (checked per request)."""

    def __init__(self, root: Path) -> None:
        self._root = os.path.realpath(root)

    async def read(
        self, path: str, line: int | None, limit: int | None, *, missing_as_empty: bool = False
    ) -> str:
        """The file's text (UTF-8, invalid bytes replaced), from 1-based `line`, `limit` lines.

        `missing_as_empty` (the child may write here): a file that does not exist, in a
        directory of the workspace that does, reads as empty text — the file a write would
        create. gemini-cli's write tool reads its target first and fails the write on any error
        answer: its ACP client rejects with the bare JSON-RPC error object, so the words its
        missing-file check looks for (`Resource not found`, `ENOENT`) never reach it.

        Raises:
            FSRefusal: outside the workspace, missing, not a regular file, or too large.
        """
        try:
            text = await anyio.to_thread.run_sync(self._read, path)
        except FSRefusal as refusal:
            if not (missing_as_empty and refusal.not_found):
                raise
            if not await anyio.to_thread.run_sync(self._creatable, path):
                raise
            return ""
        if line is None and limit is None:
            return text
        lines = text.splitlines(keepends=True)
        start = max(0, (line or 1) - 1)
        end = len(lines) if limit is None else start + max(0, limit)
        return "".join(lines[start:end])

    async def write(self, path: str, content: str) -> None:
        """Creates or replaces the file with `content`; its directory must exist.

        Raises:
            FSRefusal: outside the workspace, content too large, or the write failed.
        """
        data = content.encode("utf-8", "replace")
        if len(data) > MAX_WRITE_BYTES:
            raise FSRefusal(TOO_LARGE)
        await anyio.to_thread.run_sync(self._write, path, data)

    # -- worker thread -------------------------------------------------------------------------

    def _confine(self, path: str) -> str:
        if not isinstance(path, str) or "\x00" in path or not os.path.isabs(path):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise FSRefusal(OUTSIDE)
        real = os.path.realpath(path)
        if not self._inside(real):
            raise FSRefusal(OUTSIDE)
        return real

    def _inside(self, real: str) -> bool:
        root = self._root
        return real == root or real.startswith(root.rstrip(os.sep) + os.sep)

    def _check_fd(self, fd: int) -> None:
        """Re-checks what an open fd really is, where the OS can tell."""
        try:
            actual = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return
        if not self._inside(actual):
            raise FSRefusal(OUTSIDE)

    def _creatable(self, path: str) -> bool:
        """A missing file whose directory exists inside the workspace."""
        real = self._confine(path)
        return not os.path.lexists(real) and os.path.isdir(os.path.dirname(real))

    def _read(self, path: str) -> str:
        real = self._confine(path)
        try:
            fd = os.open(real, os.O_RDONLY | _OPEN_FLAGS)
        except FileNotFoundError:
            raise FSRefusal(NOT_FOUND, not_found=True) from None
        except OSError as error:
            raise FSRefusal(OUTSIDE if error.errno == errno.ELOOP else UNREADABLE) from None
        with os.fdopen(fd, "rb") as file:
            self._check_fd(fd)
            if not _is_regular(fd):
                raise FSRefusal(NOT_A_FILE)
            try:
                data = file.read(MAX_READ_BYTES + 1)
            except OSError:
                raise FSRefusal(UNREADABLE) from None
        if len(data) > MAX_READ_BYTES:
            raise FSRefusal(TOO_LARGE)
        return data.decode("utf-8", "replace")

    def _write(self, path: str, data: bytes) -> None:
        real = self._confine(path)
        try:
            # No O_TRUNC: nothing changes until the fd is known to be inside the workspace.
            fd = os.open(real, os.O_WRONLY | os.O_CREAT | _OPEN_FLAGS, 0o644)
        except FileNotFoundError:
            raise FSRefusal(NOT_FOUND, not_found=True) from None
        except OSError as error:
            raise FSRefusal(OUTSIDE if error.errno == errno.ELOOP else UNWRITABLE) from None
        try:
            self._check_fd(fd)
            if not _is_regular(fd):
                raise FSRefusal(NOT_A_FILE)
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        except OSError:
            raise FSRefusal(UNWRITABLE) from None
        finally:
            os.close(fd)


def _is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)
