"""LineReader: bounded lines over any chunking, over-long lines discarded, fairness by counting."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence

import anyio
import anyio.abc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from subagent_core.kit import (
    DEFAULT_MAX_FRAME_BYTES,
    FrameTooLargeError,
    LineReader,
    open_managed_process,
)

TOO_LARGE = "too-large"


class ChunkStream(anyio.abc.ByteReceiveStream):
    """Hands out fixed chunks, then EOF, without ever yielding: all data is 'already there'."""

    def __init__(self, chunks: Sequence[bytes], on_first_receive: object = None) -> None:
        self._chunks = [chunk for chunk in chunks if chunk]
        self._on_first = on_first_receive
        self.receives = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        self.receives += 1
        if self.receives == 1 and callable(self._on_first):
            self._on_first()
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)

    async def aclose(self) -> None:
        self._chunks = []


def cut(data: bytes, points: Sequence[int]) -> list[bytes]:
    """Splits `data` at the given offsets (any order, duplicates allowed)."""
    edges = sorted({0, len(data), *(p % (len(data) + 1) for p in points)})
    return [data[a:b] for a, b in itertools.pairwise(edges)]


async def read_all(reader: LineReader) -> list[bytes | str]:
    out: list[bytes | str] = []
    while True:
        try:
            out.append(await reader.receive_line())
        except FrameTooLargeError as error:
            out.append(TOO_LARGE if error.limit == reader.max_frame_bytes else "wrong limit")
        except anyio.EndOfStream:
            return out


def run(coro_fn: object, *args: object) -> object:
    async def bounded() -> object:
        with anyio.fail_after(10):
            return await coro_fn(*args)  # type: ignore[operator]

    return anyio.run(bounded, backend="asyncio")


# A line never contains `\n`, and never ends in `\r` (that `\r` would belong to the ending).
line_bytes = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"").rstrip(b"\r"))


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(line_bytes, max_size=20),
    crlf=st.lists(st.booleans(), min_size=20, max_size=20),
    terminated=st.booleans(),
    points=st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
    limit=st.integers(min_value=1, max_value=24),
)
def test_any_chunking_yields_the_lines_and_flags_exactly_the_over_long_ones(
    lines: list[bytes], crlf: list[bool], terminated: bool, points: list[int], limit: int
) -> None:
    endings = [b"\r\n" if c else b"\n" for c in crlf]
    data = b"".join(line + endings[i] for i, line in enumerate(lines))
    expected: list[bytes | str] = [line if len(line) <= limit else TOO_LARGE for line in lines]
    if not terminated and lines:
        data = data[: -len(endings[len(lines) - 1])]
        if lines[-1] == b"":
            expected.pop()  # an empty unterminated tail is no line at all
    reader = LineReader(ChunkStream(cut(data, points)), max_frame_bytes=limit)
    assert run(read_all, reader) == expected


@settings(max_examples=100, deadline=None)
@given(line=line_bytes, points=st.lists(st.integers(min_value=0, max_value=200), max_size=10))
def test_a_line_at_the_limit_passes_and_one_byte_more_does_not(
    line: bytes, points: list[int]
) -> None:
    for ending in (b"\n", b"\r\n"):
        data = line + ending + b"a\n"
        exact = LineReader(ChunkStream(cut(data, points)), max_frame_bytes=max(len(line), 1))
        assert run(read_all, exact) == [line, b"a"]
        if len(line) >= 2:
            under = LineReader(ChunkStream(cut(data, points)), max_frame_bytes=len(line) - 1)
            assert run(read_all, under) == [TOO_LARGE, b"a"]


def test_crlf_is_stripped_but_a_lone_cr_inside_a_line_is_kept() -> None:
    stream = ChunkStream([b"a\r\nb\rc\n\r\nlast\r"])
    assert run(read_all, LineReader(stream)) == [b"a", b"b\rc", b"", b"last\r"]


def test_the_default_limit_is_16_mib_and_bad_limits_are_refused() -> None:
    assert DEFAULT_MAX_FRAME_BYTES == 16 * 1024 * 1024
    assert LineReader(ChunkStream([])).max_frame_bytes == DEFAULT_MAX_FRAME_BYTES
    for bad in (0, -1, True):
        with pytest.raises(ValueError, match="max_frame_bytes must be a positive int"):
            LineReader(ChunkStream([]), max_frame_bytes=bad)


def test_the_error_text_is_fixed() -> None:
    assert str(FrameTooLargeError(8)) == "a line was longer than the frame limit of 8 bytes"


async def test_an_over_long_line_raises_at_once_and_is_discarded_on_the_next_call() -> None:
    """5 MiB without a newline under a 1 KiB limit: the raise comes after one chunk, and the
    discard pulls one chunk at a time, never accumulating the line."""
    chunk = b"x" * 65536
    stream = ChunkStream([chunk] * 80 + [b"tail\nnext\n"])
    reader = LineReader(stream, max_frame_bytes=1024)
    with anyio.fail_after(10):
        with pytest.raises(FrameTooLargeError):
            await reader.receive_line()
        assert stream.receives == 1  # a caller that stops here reads nothing more
        assert await reader.receive_line() == b"next"
    assert stream.receives == 81


class EndlessStream(anyio.abc.ByteReceiveStream):
    """A peer flooding bytes with no newline, forever."""

    def __init__(self) -> None:
        self.receives = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        self.receives += 1
        return b"x" * 4096

    async def aclose(self) -> None:
        pass


async def test_a_peer_that_never_ends_its_line_is_refused_once_the_limit_is_passed() -> None:
    stream = EndlessStream()
    reader = LineReader(stream, max_frame_bytes=64 * 1024)
    with anyio.fail_after(10), pytest.raises(FrameTooLargeError):
        await reader.receive_line()
    assert stream.receives == 17  # 16 full chunks plus the one that passed the limit


async def test_a_cancel_during_the_discard_resumes_it_on_the_next_call() -> None:
    send, receive = anyio.create_memory_object_stream[bytes](10)
    reader = LineReader(receive, max_frame_bytes=4)
    with anyio.fail_after(10), send, receive:
        await send.send(b"0123456789")  # over the limit, no newline yet
        with pytest.raises(FrameTooLargeError):
            await reader.receive_line()
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader.receive_line)
            await anyio.wait_all_tasks_blocked()  # it is discarding, waiting for the rest
            tg.cancel_scope.cancel()
        await send.send(b"more junk\nok\n")
        send.close()
        assert await reader.receive_line() == b"ok"
        for _ in range(2):
            with pytest.raises(anyio.EndOfStream):
                await reader.receive_line()


async def test_a_flooding_peer_lets_a_quiet_reader_in_within_16_lines() -> None:
    """All 10,000 flood lines are buffered at once; the quiet line arrives as the flood starts."""
    quiet_send, quiet_receive = anyio.create_memory_object_stream[bytes](1)
    flood_total = 10_000
    flood = ChunkStream(
        [b"line\n" * flood_total],
        on_first_receive=lambda: quiet_send.send_nowait(b"hello\n"),
    )
    flood_reader = LineReader(flood)
    quiet_reader = LineReader(quiet_receive)
    flood_count = 0
    seen_at: list[int] = []

    async def read_flood() -> None:
        nonlocal flood_count
        try:
            while True:
                await flood_reader.receive_line()
                flood_count += 1
        except anyio.EndOfStream:
            return

    async def read_quiet() -> None:
        assert await quiet_reader.receive_line() == b"hello"
        seen_at.append(flood_count)

    with anyio.fail_after(10), quiet_send, quiet_receive:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_quiet)
            await anyio.wait_all_tasks_blocked()  # the quiet reader waits on its stream
            tg.start_soon(read_flood)
    assert flood_count == flood_total
    assert seen_at
    assert seen_at[0] <= 16


_HUGE_LINE_CHILD = """
import sys
out = sys.stdout.buffer
out.write(b"first\\r\\n")
out.write(b"y" * (3 * 1024 * 1024) + b"\\n")
out.write(b"after\\n")
out.write(b"unterminated")
out.flush()
"""


async def test_over_a_real_pipe_a_huge_line_is_skipped_and_the_stream_goes_on() -> None:
    with anyio.fail_after(20):
        async with open_managed_process(
            [sys.executable, "-c", _HUGE_LINE_CHILD], stdin="devnull", eof_grace_seconds=5
        ) as proc:
            assert proc.stdout is not None
            reader = LineReader(proc.stdout, max_frame_bytes=1024 * 1024)
            assert await read_all(reader) == [b"first", TOO_LARGE, b"after", b"unterminated"]
            outcome = await proc.wait()
    assert outcome.exit_code == 0
