"""The pipe read end registered with the loop once: exact bytes, a bounded buffer that pushes
back on the writer, prompt wake-ups on close and cancel, and reads that never wait."""

from __future__ import annotations

import contextlib
import fcntl
import os

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
from subagent_core import _pipe_reader
from subagent_core._pipe_reader import BUFFER_LIMIT, READ_BYTES, PipeReader
from subagent_core.kit import drain_ended

pytestmark = pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="Linux pipes")


async def read_all(reader: PipeReader) -> bytes:
    parts: list[bytes] = []
    while True:
        try:
            parts.append(await reader.receive(65536))
        except anyio.EndOfStream:
            return b"".join(parts)


async def test_every_byte_arrives_in_order_then_end_of_stream() -> None:
    read_fd, write_fd = os.pipe()
    reader = PipeReader(read_fd)
    payload = bytes(range(256)) * 40_000  # 10 MB: many reads and pauses
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def write() -> None:
                await anyio.to_thread.run_sync(_write_all, write_fd, payload)
                os.close(write_fd)

            tg.start_soon(write)
            assert await read_all(reader) == payload
    await reader.aclose()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def test_an_unread_flood_is_held_to_the_bound_and_pushes_back() -> None:
    """Nobody reads: the reader buffers at most BUFFER_LIMIT plus one read, then stops reading,
    so the pipe fills and the writer is blocked; then every byte still arrives."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    capacity = fcntl.fcntl(write_fd, fcntl.F_GETPIPE_SZ)
    reader = PipeReader(read_fd)
    written = 0
    with anyio.fail_after(30):
        os.write(write_fd, b"x")
        written += 1
        assert await reader.receive(1) == b"x"  # the reader is registered from now on
        block = b"y" * 65536
        stalled = 0
        # While the reader reads, each pass of the loop (level-triggered readiness) frees room
        # in the pipe; three passes without room mean it has stopped reading. No clock involved.
        while stalled < 3:
            before = written
            with contextlib.suppress(BlockingIOError):
                while True:
                    written += os.write(write_fd, block)
            stalled = stalled + 1 if written == before else 0
            await anyio.lowlevel.checkpoint()
        unread = written - 1
        assert unread <= BUFFER_LIMIT + READ_BYTES + capacity
        assert unread >= BUFFER_LIMIT  # it did read ahead, up to the bound
        os.close(write_fd)
        assert await read_all(reader) == b"y" * unread
    await reader.aclose()


async def test_short_reads_are_joined_up_to_max_bytes_and_full_reads_are_not() -> None:
    """Ten small writes, each read on its own, reach a reader asking for much as whole reads
    joined while they fit; full reads are handed out one at a time, as they are."""
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, 1031, 4 * READ_BYTES)  # F_SETPIPE_SZ: room for two full reads
    reader = PipeReader(read_fd)
    with anyio.fail_after(10):
        for number in range(10):
            os.write(write_fd, bytes([number]) * 1000)
            reader._on_readable()  # one read per write
        assert await reader.receive(4500) == b"".join(bytes([n]) * 1000 for n in range(4))
        assert await reader.receive(1 << 20) == b"".join(bytes([n]) * 1000 for n in range(4, 10))
        os.write(write_fd, b"a" * READ_BYTES + b"b" * READ_BYTES)
        reader._on_readable()
        reader._on_readable()
        assert await reader.receive(1 << 20) == b"a" * READ_BYTES
        assert await reader.receive(1 << 20) == b"b" * READ_BYTES
    os.close(write_fd)
    await reader.aclose()


async def test_close_wakes_a_waiting_receive() -> None:
    read_fd, write_fd = os.pipe()
    reader = PipeReader(read_fd)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            failures: list[BaseException] = []

            async def wait() -> None:
                try:
                    await reader.receive()
                except anyio.ClosedResourceError as error:
                    failures.append(error)

            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            reader.close()
        assert len(failures) == 1
        with pytest.raises(anyio.ClosedResourceError):
            await reader.receive()
    os.close(write_fd)


async def test_a_cancelled_receive_loses_nothing() -> None:
    read_fd, write_fd = os.pipe()
    reader = PipeReader(read_fd)
    with anyio.fail_after(10):
        with anyio.CancelScope() as scope:
            scope.cancel()
            await reader.receive()
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader.receive)
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
        os.write(write_fd, b"kept")
        os.close(write_fd)
        assert await read_all(reader) == b"kept"
    await reader.aclose()


async def test_a_read_error_is_broken_resource() -> None:
    """A descriptor that cannot be read (here: a write end) reports BrokenResourceError."""
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    reader = PipeReader(write_fd)
    with anyio.fail_after(10), pytest.raises(anyio.BrokenResourceError):
        await reader.receive()
    await reader.aclose()


async def test_receive_nowait_reports_each_state_without_waiting() -> None:
    read_fd, write_fd = os.pipe()
    reader = PipeReader(read_fd)
    with pytest.raises(anyio.WouldBlock):
        reader.receive_nowait()
    os.write(write_fd, b"abcdef")
    assert reader.receive_nowait(4) == b"abcd"
    assert reader.receive_nowait() == b"ef"
    os.close(write_fd)
    with pytest.raises(anyio.EndOfStream):
        reader.receive_nowait()
    with pytest.raises(anyio.EndOfStream):
        reader.receive_nowait()
    reader.close()
    with pytest.raises(anyio.ClosedResourceError):
        reader.receive_nowait()


async def test_drain_ended_feeds_everything_of_an_ended_pipe() -> None:
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    reader = PipeReader(read_fd)
    payload = bytes(range(256)) * 3000  # more than one read
    _write_all(write_fd, payload)
    os.close(write_fd)
    fed: list[bytes] = []
    assert drain_ended(reader, fed.append) is True
    assert b"".join(fed) == payload
    await reader.aclose()


async def test_drain_ended_says_false_while_a_writer_lives_and_keeps_what_it_read() -> None:
    read_fd, write_fd = os.pipe()
    reader = PipeReader(read_fd)
    os.write(write_fd, b"early")
    fed: list[bytes] = []
    assert drain_ended(reader, fed.append) is False
    assert fed == [b"early"]
    os.write(write_fd, b" late")
    os.close(write_fd)
    with anyio.fail_after(10):
        assert await read_all(reader) == b" late"
    await reader.aclose()


async def test_drain_ended_reads_at_most_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer outside the tree could keep the pipe full: one call reads a bounded amount."""
    monkeypatch.setattr(_pipe_reader, "DRAIN_LIMIT", 8)
    read_fd, write_fd = os.pipe()
    reader = PipeReader(read_fd)
    os.write(write_fd, b"x" * 4)
    os.write(write_fd, b"y" * 4)
    os.close(write_fd)
    fed: list[bytes] = []
    with monkeypatch.context() as patch:
        patch.setattr(_pipe_reader, "READ_BYTES", 4)
        assert drain_ended(reader, fed.append) is False
    assert b"".join(fed) == b"xxxxyyyy"
    assert drain_ended(reader, fed.append) is True
    await reader.aclose()


async def test_drain_ended_cannot_read_other_streams() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](1)
    with send, receive:
        fed: list[bytes] = []
        assert drain_ended(receive, fed.append) is False
        assert fed == []
