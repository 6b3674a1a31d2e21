"""open_stdio_streams in real child processes: pipes, regular files, /dev/null, stdout shared with stderr."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import anyio.abc
from subagent_core.kit import LineReader, ProcessOutcome, open_managed_process

# An echo server: reports its descriptors' blocking modes, echoes lines (`too-large` for an
# over-long one), and after the block reports the modes again. Optional argv: an input file and
# an output file to put on fd 0/1, or `shared` to make stderr the same open file as stdout.
ECHO_SERVER = """
import os, sys
import anyio
from subagent_core.kit import FrameTooLargeError, LineReader, open_stdio_streams

args = sys.argv[1:]
if args and args[0] == "shared":
    os.dup2(1, 2)
elif args and args[0] == "connect":
    import socket
    peer = socket.socket(socket.AF_UNIX)
    peer.connect(args[1])
    os.dup2(peer.fileno(), 0)
    os.dup2(peer.fileno(), 1)
    peer.close()
elif args and args[0] == "no-reader":
    read_end, write_end = os.pipe()
    os.dup2(write_end, 1)
    os.close(read_end)
elif args:
    os.dup2(os.open(args[0], os.O_RDONLY), 0)
    os.dup2(os.open(args[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)

def modes():
    return b"%d,%d" % (os.get_blocking(0), os.get_blocking(1))

async def main():
    try:
        await serve()
    except anyio.BrokenResourceError:
        sys.exit(3)
    os.write(1, b"after:" + modes() + b"\\n")

async def serve():
    async with open_stdio_streams() as (receive, send):
        await send.send(b"inside:" + modes() + b"\\n")
        reader = LineReader(receive, max_frame_bytes=4 * 1024 * 1024)
        while True:
            try:
                line = await reader.receive_line()
            except FrameTooLargeError:
                await send.send(b"too-large\\n")
                continue
            except anyio.EndOfStream:
                break
            await send.send(b"echo:" + line + b"\\n")

anyio.run(main)
"""


def server(*args: str) -> list[str]:
    return [sys.executable, "-c", ECHO_SERVER, *args]


async def read_all(stream: anyio.abc.ByteReceiveStream) -> list[bytes]:
    reader = LineReader(stream)
    lines: list[bytes] = []
    try:
        while True:
            lines.append(await reader.receive_line())
    except anyio.EndOfStream:
        return lines


async def test_over_pipes_the_server_joins_the_loop_and_restores_blocking_mode() -> None:
    big = b"z" * (2 * 1024 * 1024)  # far over a pipe's buffer: partial writes both ways
    with anyio.fail_after(30):
        async with open_managed_process(server(), eof_grace_seconds=10) as proc:
            assert proc.stdin is not None
            assert proc.stdout is not None
            stdin, stdout = proc.stdin, proc.stdout
            lines: list[bytes] = []
            async with anyio.create_task_group() as tg:

                async def collect() -> None:
                    lines.extend(await read_all(stdout))

                tg.start_soon(collect)
                await stdin.send(b"one\r\ntwo\n" + big + b"\n" + b"x" * (5 * 1024 * 1024) + b"\n")
                await stdin.send(b"last")
                await proc.close_stdin()
            outcome = await proc.wait()
    assert outcome == ProcessOutcome(exit_code=0, signal=None)
    assert lines == [
        b"inside:0,0",
        b"echo:one",
        b"echo:two",
        b"echo:" + big,
        b"too-large",
        b"echo:last",
        b"after:1,1",
    ]


async def test_a_socket_on_stdin_and_stdout_joins_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with anyio.fail_after(30):
        async with (
            await anyio.create_unix_listener(path) as listener,
            open_managed_process(server("connect", str(path)), stdin="devnull") as proc,
        ):
            assert proc.stdout is not None
            async with await listener.accept() as peer:
                reader = LineReader(peer)
                assert await reader.receive_line() == b"inside:0,0"
                await peer.send(b"over a socket\r\n")
                assert await reader.receive_line() == b"echo:over a socket"
                await peer.send_eof()
                assert await reader.receive_line() == b"after:1,1"
            outcome = await proc.wait()
    assert outcome == ProcessOutcome(exit_code=0, signal=None)


async def test_regular_files_go_through_a_worker_thread(tmp_path: Path) -> None:
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(b"".join(b'{"n": %d}\n' % n for n in range(1000)))
    with anyio.fail_after(30):
        async with open_managed_process(
            server(str(source), str(target)), stdin="devnull", stdout="devnull"
        ) as proc:
            outcome = await proc.wait()
    assert outcome.exit_code == 0
    lines = target.read_bytes().split(b"\n")
    assert lines[0] == b"inside:1,1"
    assert lines[1:1001] == [b'echo:{"n": %d}' % n for n in range(1000)]
    assert lines[1001:] == [b"after:1,1", b""]


async def test_dev_null_stdin_is_an_immediate_end() -> None:
    with anyio.fail_after(30):
        async with open_managed_process(server(), stdin="devnull") as proc:
            assert proc.stdout is not None
            lines = await read_all(proc.stdout)
            outcome = await proc.wait()
    assert outcome.exit_code == 0
    assert lines == [b"inside:1,0", b"after:1,1"]


async def test_stdout_shared_with_stderr_stays_blocking() -> None:
    """Non-blocking stdout would make stderr writes fail: such a stdout is served by a thread."""
    with anyio.fail_after(30):
        async with open_managed_process(server("shared"), eof_grace_seconds=10) as proc:
            assert proc.stdin is not None
            assert proc.stdout is not None
            await proc.stdin.send(b"hi\n")
            await proc.close_stdin()
            lines = await read_all(proc.stdout)
            outcome = await proc.wait()
    assert outcome.exit_code == 0
    assert lines == [b"inside:0,1", b"echo:hi", b"after:1,1"]


async def test_a_gone_reader_of_stdout_is_a_broken_resource() -> None:
    with anyio.fail_after(30):
        async with open_managed_process(server("no-reader"), stdout="devnull") as proc:
            outcome = await proc.wait()
    assert outcome == ProcessOutcome(exit_code=3, signal=None)
