"""`harness mcp` keeps its children contained: cancel, stdin EOF, a killed client or server,
the bound on children alive at once, and progress on a long call (closed words only)."""

from __future__ import annotations

import os
import re
import signal
import sys
from itertools import pairwise
from typing import Any

import anyio
import pytest
from mcp_types import JSONRPCRequest, JSONRPCResponse

CHILD_TEXT = "CHILD-TEXT-3d9e"
PROGRESS = re.compile(
    r"(queued|running|settled)"
    r"( · \d+ tool calls?( \(\d+ [a-z_]+(, \d+ [a-z_]+)*\))?)?"
    r" · \d+ s( · [\d,]+ tokens)?"
)
"""Every progress message: the closed vocabulary and numbers, nothing else."""

_CLIENT = """
import sys, anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

async def main():
    params = StdioServerParameters(command=sys.executable, args=sys.argv[1:], env=dict(__import__("os").environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(3):
            await session.call_tool("delegate_start", {"agent": "hang", "prompt": "go"})
        print("started", flush=True)
        await anyio.sleep_forever()

anyio.run(main)
"""
"""A client in a process of its own (the official stdio transport), to be SIGKILLed."""


async def test_progress_arrives_at_least_every_15_seconds_of_a_40_second_child(
    root: Any, kit: Any
) -> None:
    root.agent(
        "slow",
        {
            "text": CHILD_TEXT,
            "thought": CHILD_TEXT,
            "tool_call": True,
            "usage": {"inputTokens": 1000, "outputTokens": 204, "totalTokens": 1204},
            "keepalive": {"interval_seconds": 10, "count": 4},
        },
    )
    seen: list[tuple[float, float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((anyio.current_time(), value, message))

    async with kit.open(root) as server:
        started = anyio.current_time()
        with anyio.fail_after(100):
            result = await server.session.call_tool(
                "delegate",
                {"agent": "slow", "prompt": "take your time"},
                progress_callback=progress,
            )
        ended = anyio.current_time()
    assert result.structured_content["output"] == CHILD_TEXT
    assert ended - started >= 40
    moments = [started, *(moment for moment, _, _ in seen), ended]
    gaps = [later - earlier for earlier, later in pairwise(moments)]
    assert max(gaps) <= 15, gaps
    values = [value for _, value, _ in seen]
    assert values == sorted(set(values))
    messages = [message or "" for _, _, message in seen]
    assert all(PROGRESS.fullmatch(message) for message in messages), messages
    assert any(m.startswith("running · 1 tool call (1 read)") for m in messages), messages
    assert CHILD_TEXT not in server.traffic().replace(
        result.structured_content["output"], ""
    ).replace(result.content[0].text, "")


async def test_a_cancelled_call_leaves_no_process_within_a_second_and_gets_no_answer(
    root: Any, kit: Any
) -> None:
    root.agent("hang", {"text": "working", "hang_at": "prompt", "ignore_cancel": True})
    async with kit.open(root) as server:
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await server.session.call_tool("delegate", {"agent": "hang", "prompt": "go"})

            tg.start_soon(call)
            await kit.settle(lambda: len(kit.fake_children()) == 1, seconds=30)
            tg.cancel_scope.cancel()  # the client sends notifications/cancelled
        took = await kit.settle(lambda: kit.fake_children() == [], seconds=5)
        assert took <= 1.0
        after = await server.session.call_tool("sessions", {})
        assert after.is_error is False
    calls = [m for m in server.sent if isinstance(m, JSONRPCRequest) and m.method == "tools/call"]
    answered = {m.id for m in server.received if isinstance(m, JSONRPCResponse)}
    assert calls[0].id not in answered
    assert any(getattr(m, "method", None) == "notifications/cancelled" for m in server.sent)


async def test_stdin_closing_with_three_runs_live_stops_them_all_and_the_server(
    root: Any, kit: Any
) -> None:
    root.agent("hang", {"text": "working", "hang_at": "prompt", "ignore_cancel": True})
    """Two background runs and one `delegate` call in flight, then the client closes stdin."""
    failures: list[BaseException] = []
    async with kit.open(root) as server, anyio.create_task_group() as tg:

        async def in_flight() -> None:
            try:
                await server.session.call_tool("delegate", {"agent": "hang", "prompt": "go"})
            except Exception as error:  # the connection ends under it
                failures.append(error)

        for _ in range(2):
            await server.session.call_tool("delegate_start", {"agent": "hang", "prompt": "go"})
        tg.start_soon(in_flight)
        await kit.settle(lambda: len(kit.fake_children()) == 3, seconds=30)
        await server.close_stdin()
        with anyio.fail_after(20):
            code = await server.process.wait()
        assert code == 0
        assert kit.fake_children() == []
        await kit.settle(lambda: kit.descendants() == [], seconds=5)
    assert len(failures) == 1


async def test_a_killed_client_leaves_nothing_within_two_seconds(root: Any, kit: Any) -> None:
    root.agent("hang", {"text": "working", "hang_at": "prompt", "ignore_cancel": True})
    argv = [sys.executable, "-c", _CLIENT, "-m", "harness", "mcp", "-w", str(root.path)]
    client = await anyio.open_process(argv, env=root.env(), stderr=None)
    try:
        assert client.stdout is not None
        with anyio.fail_after(60):
            line = await client.stdout.receive()
        assert line.startswith(b"started")
        await kit.settle(lambda: len(kit.fake_children()) == 3, seconds=30)
        client.send_signal(signal.SIGKILL)
        await client.wait()
        took = await kit.settle(lambda: kit.descendants() == [], seconds=10)
        assert took <= 2.0
    finally:
        if client.returncode is None:
            client.kill()
            await client.wait()


async def test_a_killed_server_leaves_no_child_tree(root: Any, kit: Any) -> None:
    """The server SIGKILLed: core's guards kill every child's tree (the guard's own promise)."""
    root.agent(
        "hang",
        {"text": "working", "hang_at": "prompt", "ignore_eof": True, "trap_sigterm": True},
    )
    async with kit.open(root) as server:
        for _ in range(2):
            await server.session.call_tool("delegate_start", {"agent": "hang", "prompt": "go"})
        await kit.settle(lambda: len(kit.fake_children()) == 2, seconds=30)
        os.kill(server.pid, signal.SIGKILL)
        await kit.settle(lambda: kit.fake_children() == [], seconds=5)
        await kit.settle(lambda: kit.descendants() == [], seconds=10)


async def test_sixteen_calls_never_have_more_than_four_children_alive(root: Any, kit: Any) -> None:
    gate = root.scripts / "gate"
    root.agent("gated", {"text": "done", "gate_file": str(gate)})
    most = 0

    async with kit.open(root, "--max-runs", "4") as server:
        results: list[Any] = []

        async def call() -> None:
            results.append(
                await server.session.call_tool("delegate", {"agent": "gated", "prompt": "go"})
            )

        async def watch() -> None:
            nonlocal most
            while True:  # sampling other processes: there is no event to wait on
                most = max(most, len(kit.fake_children()))
                await anyio.sleep(0.005)

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            async with anyio.create_task_group() as calls:
                for _ in range(16):
                    calls.start_soon(call)
                await kit.settle(lambda: len(kit.fake_children()) == 4, seconds=60)
                gate.write_text("open", encoding="utf-8")
            tg.cancel_scope.cancel()
    assert [r.structured_content["stop_reason"] for r in results] == ["completed"] * 16
    assert most == 4


async def test_a_call_past_the_queue_is_refused_at_once(root: Any, kit: Any) -> None:
    gate = root.scripts / "gate"
    root.agent("gated", {"text": "done", "gate_file": str(gate)})
    async with kit.open(root, "--max-runs", "1", "--max-queued", "1") as server:
        call = server.session.call_tool
        first = await call("delegate_start", {"agent": "gated", "prompt": "a"})
        second = await call("delegate_start", {"agent": "gated", "prompt": "b"})
        third = await call("delegate", {"agent": "gated", "prompt": "c"})
        gate.write_text("open", encoding="utf-8")
        for started in (first, second):
            run_id = started.structured_content["run_id"]
            done = await call("delegate_result", {"run_id": run_id, "wait_seconds": 60})
            assert done.structured_content["stop_reason"] == "completed"
    assert third.is_error is True
    assert third.content[0].text == (
        "harness: harness mcp is busy: its 1 child slots are taken and 1 calls are waiting "
        "(--max-runs, --max-queued); try again when one has finished"
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
async def test_a_signal_stops_every_run_and_the_server_exits_0(
    root: Any, kit: Any, signum: int
) -> None:
    root.agent("hang", {"text": "working", "hang_at": "prompt", "ignore_cancel": True})
    async with kit.open(root) as server:
        await server.session.call_tool("delegate_start", {"agent": "hang", "prompt": "go"})
        await kit.settle(lambda: len(kit.fake_children()) == 1, seconds=30)
        os.kill(server.pid, signum)
        with anyio.fail_after(20):
            assert await server.process.wait() == 0
        assert kit.fake_children() == []
