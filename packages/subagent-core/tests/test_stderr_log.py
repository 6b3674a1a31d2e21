"""A child's stderr owned with the child: drained always, bounded on disk, shown only on request."""

from __future__ import annotations

import asyncio
import io
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.abc
import pytest
from hypothesis import given
from hypothesis import strategies as st
from subagent_core.kit import (
    ChildStderr,
    ManagedProcess,
    ProcessOutcome,
    drain_stderr,
    open_managed_process,
)

ChildArgv = Callable[..., list[str]]
SECRET = "sk-child-stderr-secret-0042"


def _last_words(text: str, code: int) -> list[str]:
    """A child that writes `text` to stderr and exits `code` at once."""
    script = f"import sys; sys.stderr.write({text!r}); sys.stderr.flush(); sys.exit({code})"
    return [sys.executable, "-c", script]


async def _read_line(proc: ManagedProcess) -> bytes:
    assert proc.stdout is not None
    data = bytearray()
    while not data.endswith(b"\n"):
        data += await proc.stdout.receive()
    return bytes(data).strip()


def _logs(directory: Path) -> list[Path]:
    return sorted(directory.iterdir()) if directory.exists() else []


def _drain_tasks() -> list[asyncio.Task[object]]:
    return [task for task in asyncio.all_tasks() if task.get_name() == "child stderr"]


async def test_a_flood_never_blocks_and_the_log_keeps_its_first_and_newest_half(
    child: ChildArgv, tmp_path: Path
) -> None:
    total = 4 << 20  # four times the pipe: an undrained child would block long before "done"
    logs = tmp_path / "logs"
    sink = ChildStderr(log_dir=logs, max_bytes=64 * 1024)
    with anyio.fail_after(30):
        async with open_managed_process(child("stderr_flood", str(total)), stderr=sink) as proc:
            assert await _read_line(proc) == b"done"
        assert proc.outcome == ProcessOutcome(exit_code=0, signal=None)
    [log] = _logs(logs)
    half = 32 * 1024
    marker = f"\n[... {total - 2 * half} bytes left out ...]\n".encode()
    assert log.read_bytes() == b"e" * half + marker + b"e" * half
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(logs.stat().st_mode) == 0o700
    assert _drain_tasks() == []


async def test_without_a_log_dir_it_is_drained_and_dropped(
    child: ChildArgv, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with anyio.fail_after(30):
        async with open_managed_process(
            child("stderr_flood", str(2 << 20)), cwd=tmp_path, stderr=ChildStderr()
        ) as proc:
            assert await _read_line(proc) == b"done"
    assert _logs(tmp_path) == []
    assert capfd.readouterr().err == ""
    assert _drain_tasks() == []


async def test_a_crashing_childs_last_words_reach_its_log(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with open_managed_process(
            _last_words(f"fatal: token={SECRET}\n", 3),
            stdin="devnull",
            stderr=ChildStderr(log_dir=tmp_path),
        ) as proc:
            assert await proc.wait() == ProcessOutcome(exit_code=3, signal=None)
    [log] = _logs(tmp_path)
    assert log.read_text("utf-8") == f"fatal: token={SECRET}\n"


async def test_a_silent_child_makes_no_file(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with open_managed_process(
            _last_words("", 0), stdin="devnull", stderr=ChildStderr(log_dir=tmp_path / "logs")
        ) as proc:
            await proc.wait()
    assert not (tmp_path / "logs").exists()


async def test_live_copies_it_to_our_stderr_as_well(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with anyio.fail_after(30):
        async with open_managed_process(
            _last_words("for the person at the terminal\n", 0),
            stdin="devnull",
            stderr=ChildStderr(log_dir=tmp_path, live=True),
        ) as proc:
            await proc.wait()
    assert capfd.readouterr().err == "for the person at the terminal\n"
    [log] = _logs(tmp_path)
    assert log.read_text("utf-8") == "for the person at the terminal\n"


async def test_a_log_that_cannot_be_made_is_given_up_and_the_child_still_drained(
    child: ChildArgv, tmp_path: Path
) -> None:
    occupied = tmp_path / "a-file"
    occupied.write_bytes(b"")
    with anyio.fail_after(30):
        async with open_managed_process(
            child("stderr_flood", str(2 << 20)), stderr=ChildStderr(log_dir=occupied / "logs")
        ) as proc:
            assert await _read_line(proc) == b"done"
    assert occupied.read_bytes() == b""


async def test_a_cancelled_owner_ends_the_drain_with_the_child(
    child: ChildArgv, tmp_path: Path
) -> None:
    with anyio.fail_after(30):
        with anyio.CancelScope() as scope:
            async with open_managed_process(
                child("stderr_flood", str(1 << 20)), stderr=ChildStderr(log_dir=tmp_path)
            ) as proc:
                assert await _read_line(proc) == b"done"
                scope.cancel()
                await anyio.sleep_forever()
    assert proc.outcome is not None
    assert _drain_tasks() == []
    [log] = _logs(tmp_path)
    assert log.stat().st_size <= ChildStderr().max_bytes + 64


async def test_drain_stderr_reads_a_stream_to_its_end_into_a_log(tmp_path: Path) -> None:
    send, receive = anyio.create_memory_object_stream[bytes](4)
    live = io.BytesIO()
    log = ChildStderr(log_dir=tmp_path, max_bytes=10, live=True).open_log(live_to=live)
    with anyio.fail_after(10), receive:
        async with anyio.create_task_group() as tg:
            tg.start_soon(drain_stderr, _Stream(receive), log)
            async with send:
                for chunk in (b"abc", b"defgh", b"ijklmnop"):
                    await send.send(chunk)
    log.close()
    assert live.getvalue() == b"abcdefghijklmnop"
    assert log.path is not None
    assert log.path.read_bytes() == b"abcde\n[... 6 bytes left out ...]\nlmnop"
    assert log.received == 16


class _Stream(anyio.abc.ByteReceiveStream):
    """A memory object stream as a byte stream (what a relay channel hands out)."""

    def __init__(self, receive: anyio.abc.ObjectReceiveStream[bytes]) -> None:
        self._receive = receive

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self._receive.receive()

    async def aclose(self) -> None:
        await self._receive.aclose()


@given(
    chunks=st.lists(st.binary(min_size=1, max_size=50), max_size=30),
    max_bytes=st.integers(2, 200),
)
def test_the_file_is_the_first_half_and_the_newest_half_never_more(
    chunks: list[bytes], max_bytes: int
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        log = ChildStderr(log_dir=Path(directory), max_bytes=max_bytes).open_log()
        for chunk in chunks:
            log.write(chunk)
        log.close()
        written = b"" if log.path is None else log.path.read_bytes()
    data = b"".join(chunks)
    tail = max_bytes // 2
    head = max_bytes - tail
    if len(data) <= max_bytes:
        assert written == data
    else:
        marker = f"\n[... {len(data) - max_bytes} bytes left out ...]\n".encode()
        assert written == data[:head] + marker + data[len(data) - tail :]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_bytes": 1}, "ChildStderr.max_bytes must be an int of 2 or more"),
        ({"max_bytes": True}, "ChildStderr.max_bytes must be an int of 2 or more"),
        ({"log_dir": 3}, "ChildStderr.log_dir must be a path or None"),
        ({"live": "yes"}, "ChildStderr.live must be True or False"),
    ],
)
def test_bad_values_name_the_field(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        ChildStderr(**fields)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_a_string_log_dir_is_a_path() -> None:
    assert ChildStderr(log_dir="logs").log_dir == Path("logs")  # type: ignore[arg-type]
