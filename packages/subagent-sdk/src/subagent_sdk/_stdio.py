"""This process's own stdin/stdout as anyio byte streams, for a runtime serving the wire.

POSIX: the descriptors are made non-blocking and awaited with `anyio.wait_readable` /
`wait_writable`, so no thread is ever stuck in a read when the process wants to exit. Windows
(pipes cannot be awaited there): reads and writes run in worker threads.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Final

import anyio
import anyio.abc
import anyio.to_thread

_RECEIVE_BYTES: Final = 65536


class _DescriptorReceiveStream(anyio.abc.ByteReceiveStream):
    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False

    async def receive(self, max_bytes: int = _RECEIVE_BYTES) -> bytes:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            if sys.platform == "win32":
                data = await anyio.to_thread.run_sync(
                    os.read, self._fd, max_bytes, abandon_on_cancel=True
                )
            else:
                try:
                    data = os.read(self._fd, max_bytes)
                except BlockingIOError:
                    await anyio.wait_readable(self._fd)
                    continue
                except OSError as error:
                    raise anyio.BrokenResourceError from error
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        self._closed = True


class _DescriptorSendStream(anyio.abc.ByteSendStream):
    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                if sys.platform == "win32":
                    written = await anyio.to_thread.run_sync(os.write, self._fd, view)
                else:
                    written = os.write(self._fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            except OSError as error:
                raise anyio.BrokenResourceError from error
            view = view[written:]

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                os.close(self._fd)
            except OSError:
                pass


@asynccontextmanager
async def open_stdio() -> AsyncGenerator[
    tuple[anyio.abc.ByteReceiveStream, anyio.abc.ByteSendStream], None
]:
    """Yields `(stdin, stdout)` byte streams of this process; restores blocking mode on exit.

    Write nothing else to stdout meanwhile: it carries frames only (log to stderr).
    """
    stdin_fd, stdout_fd = sys.stdin.fileno(), os.dup(sys.stdout.fileno())
    restore: list[tuple[int, bool]] = []
    if sys.platform != "win32":
        for fd in (stdin_fd, stdout_fd):
            restore.append((fd, os.get_blocking(fd)))
            os.set_blocking(fd, False)
    receive, send = _DescriptorReceiveStream(stdin_fd), _DescriptorSendStream(stdout_fd)
    try:
        yield receive, send
    finally:
        await receive.aclose()
        if sys.platform != "win32":
            for fd, blocking in restore:
                try:
                    os.set_blocking(fd, blocking)
                except OSError:
                    pass
        await send.aclose()
