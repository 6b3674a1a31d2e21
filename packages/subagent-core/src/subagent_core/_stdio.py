"""This process's own stdin/stdout as anyio byte streams, for the stdio servers.

Pipes and sockets join the event loop (non-blocking descriptors, `anyio.wait_readable` /
`wait_writable`). Anything else (a regular file, a terminal, `/dev/null`, every handle on
Windows) is served by a worker thread, so `server < requests.jsonl > out.jsonl` works too; a
descriptor that shares its open file with stderr also stays blocking, because making it
non-blocking would make stderr writes fail when the reader is slow.

Both directions are bounded: the loop path reads only when asked, and the stdin thread hands
over one chunk at a time and waits until it is taken. Framing is the caller's (`LineReader`).
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Final

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

_STDIN_FD: Final = 0
_STDOUT_FD: Final = 1
_STDERR_FD: Final = 2
_CHUNK_BYTES: Final = 65536


@asynccontextmanager
async def open_stdio_streams() -> AsyncGenerator[
    tuple[anyio.abc.ByteReceiveStream, anyio.abc.ByteSendStream]
]:
    """Our own stdin and stdout as `(receive, send)` byte streams, for the block's duration.

    `receive` raises `anyio.EndOfStream` at the end of stdin; `send` writes each item whole
    (concurrent sends never interleave) and raises `anyio.BrokenResourceError` once the reader
    of stdout is gone. A send cancelled after writing part of its item leaves the stream broken,
    since the peer has seen half a frame. On exit the descriptors get their blocking mode back;
    they are not closed.
    """
    try:
        sys.stdout.flush()  # anything print() buffered goes out before our frames
    except (OSError, ValueError, AttributeError):
        pass
    async with AsyncExitStack() as stack:
        receive: anyio.abc.ByteReceiveStream
        send: anyio.abc.ByteSendStream
        if _joins_loop(_STDIN_FD):
            receive = _FdReceiveStream(_STDIN_FD)
        else:
            receive = _ThreadReceiveStream(_STDIN_FD)
        stack.push_async_callback(receive.aclose)
        if _joins_loop(_STDOUT_FD):
            send = _FdSendStream(_STDOUT_FD)
        else:
            send = _ThreadSendStream(_STDOUT_FD)
        stack.push_async_callback(send.aclose)
        yield receive, send


def _joins_loop(fd: int) -> bool:
    """True for a pipe or socket the event loop can wait on without touching stderr."""
    if sys.platform == "win32":
        return False
    try:
        info = os.fstat(fd)
    except OSError:
        return False
    if not (stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode)):
        return False
    try:
        err = os.fstat(_STDERR_FD)
    except OSError:
        return True
    return (info.st_dev, info.st_ino) != (err.st_dev, err.st_ino)


class _NonBlocking:
    """Sets O_NONBLOCK on a descriptor and puts the old mode back on `restore()` (POSIX only)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._was_blocking = False
        if sys.platform != "win32":
            self._was_blocking = os.get_blocking(fd)
            if self._was_blocking:
                os.set_blocking(fd, False)

    def restore(self) -> None:
        if sys.platform != "win32" and self._was_blocking:
            try:
                os.set_blocking(self._fd, True)
            except OSError:
                pass


class _FdReceiveStream(anyio.abc.ByteReceiveStream):
    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._mode = _NonBlocking(fd)
        self._closed = False

    async def receive(self, max_bytes: int = _CHUNK_BYTES) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        await anyio.lowlevel.checkpoint_if_cancelled()
        waited = False
        while True:
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                waited = True
                await anyio.wait_readable(self._fd)
                if self._closed:
                    raise anyio.ClosedResourceError from None
                continue
            except OSError as error:
                raise anyio.BrokenResourceError from error
            break
        if not waited:
            await anyio.lowlevel.cancel_shielded_checkpoint()
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._mode.restore()
        await anyio.lowlevel.checkpoint()


class _SerialSendStream(anyio.abc.ByteSendStream):
    """One `send` at a time; refuses after close, and for good once a write broke the stream."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = anyio.Lock()
        self._closed = False
        self._broken = False

    async def send(self, item: bytes) -> None:
        async with self._lock:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._broken:
                raise anyio.BrokenResourceError
            await self._write(item)

    async def _write(self, item: bytes) -> None:
        """Writes all of `item`, setting `_broken` when the stream cannot be used again."""
        raise NotImplementedError


class _FdSendStream(_SerialSendStream):
    def __init__(self, fd: int) -> None:
        super().__init__(fd)
        self._mode = _NonBlocking(fd)

    async def _write(self, item: bytes) -> None:
        view = memoryview(item)
        waited = False
        try:
            while view:
                try:
                    written = os.write(self._fd, view)
                except BlockingIOError:
                    waited = True
                    await anyio.wait_writable(self._fd)
                    continue
                except OSError as error:
                    self._broken = True
                    raise anyio.BrokenResourceError from error
                view = view[written:]
        except anyio.get_cancelled_exc_class():
            if len(view) not in (0, len(item)):
                self._broken = True  # half a frame is on the wire
            raise
        if not waited:
            await anyio.lowlevel.cancel_shielded_checkpoint()

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._mode.restore()
        await anyio.lowlevel.checkpoint()


class _ThreadReceiveStream(anyio.abc.ByteReceiveStream):
    """stdin read by a daemon thread that hands over one chunk at a time (a zero buffer)."""

    def __init__(self, fd: int) -> None:
        self._chunks_in, self._chunks = anyio.create_memory_object_stream[bytes](0)
        self._pending = b""
        self._closed = False
        token = anyio.lowlevel.current_token()
        # Daemon: a read blocked on a terminal cannot be interrupted; process exit ends it.
        threading.Thread(
            target=self._feed, args=(fd, token), daemon=True, name="subagent-core-stdin"
        ).start()

    def _feed(self, fd: int, token: anyio.lowlevel.EventLoopToken) -> None:
        send = self._chunks_in
        try:
            while True:
                try:
                    chunk = os.read(fd, _CHUNK_BYTES)
                except OSError:
                    return
                if not chunk:
                    return
                anyio.from_thread.run(send.send, chunk, token=token)
        except Exception:
            return  # the reader closed its end, or the event loop is gone
        finally:
            try:
                anyio.from_thread.run_sync(send.close, token=token)
            except Exception:
                pass

    async def receive(self, max_bytes: int = _CHUNK_BYTES) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        if not self._pending:
            self._pending = await self._chunks.receive()
        data, self._pending = self._pending[:max_bytes], self._pending[max_bytes:]
        return data

    async def aclose(self) -> None:
        self._closed = True
        self._chunks.close()
        await anyio.lowlevel.checkpoint()


class _ThreadSendStream(_SerialSendStream):
    """stdout written by a worker thread per item: for files, terminals and Windows handles."""

    async def _write(self, item: bytes) -> None:
        try:
            await anyio.to_thread.run_sync(_write_all, self._fd, item)
        except OSError as error:
            self._broken = True
            raise anyio.BrokenResourceError from error

    async def aclose(self) -> None:
        self._closed = True
        await anyio.lowlevel.checkpoint()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
