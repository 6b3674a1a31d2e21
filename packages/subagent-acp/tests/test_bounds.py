"""A hostile child cannot exhaust the parent: bounded requests, writes, output; first answers win.

Memory is measured as the parent's peak RSS growth while the run lives (a bound, never a time).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import psutil
from subagent_acp import ACPProvider
from subagent_core import SubagentRegistry, SubagentRequest, SubagentResult

MB = 1024 * 1024
TRANSPORT = "Subagent failure (provider: acp; stage: prompt; category: transport)"
CUT = "\n[output truncated]"


@asynccontextmanager
async def peak_rss_growth() -> AsyncIterator[list[int]]:
    """Samples this process's RSS while the block runs; yields a one-item list: peak growth."""
    process = psutil.Process()
    base = process.memory_info().rss
    peak = [0]

    async def sample() -> None:
        while True:
            peak[0] = max(peak[0], process.memory_info().rss - base)
            await anyio.sleep(0.005)

    async with anyio.create_task_group() as tg:
        tg.start_soon(sample)
        try:
            yield peak
        finally:
            peak[0] = max(peak[0], process.memory_info().rss - base)
            tg.cancel_scope.cancel()


async def run_and_dispose(config) -> tuple[SubagentResult, str | None]:
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    run = await registry.start("acp", SubagentRequest(prompt="go"))
    async with run:
        result = await run.result()
        disposed = await run.dispose()
    return result, disposed


async def test_a_request_flood_from_a_child_that_never_reads_is_bounded(make_config) -> None:
    """100k requests while the child never reads stdin: bounded memory, `transport`, all gone."""
    config = make_config(
        {"flood_requests": {"method": "fs/read_text_file", "count": 100_000}},
        write_timeout_seconds=1.0,
    )
    with anyio.fail_after(60):
        async with peak_rss_growth() as growth:
            result, disposed = await run_and_dispose(config)
    assert result == SubagentResult(stop_reason="error", output="", diagnostic=TRANSPORT)
    assert disposed is None
    assert growth[0] <= 64 * MB


async def test_a_child_that_stops_reading_its_answer_ends_the_run_as_transport(
    make_config, tmp_path: Path
) -> None:
    """It asks for a 4 MiB file, then never reads: our answer's write stalls while our reader
    waits on a silent pipe; the write bound ends the run (no hang, nothing left)."""
    big = tmp_path / "big.txt"
    big.write_bytes(b"y" * (4 * MB))
    config = make_config(
        {"flood_requests": {"method": "fs/read_text_file", "count": 1, "path": str(big)}},
        fs="read",
        write_timeout_seconds=1.0,
    )
    with anyio.fail_after(60):
        result, disposed = await run_and_dispose(config)
    assert result == SubagentResult(stop_reason="error", output="", diagnostic=TRANSPORT)
    assert disposed is None


async def test_a_request_flood_from_a_reading_child_is_answered_and_bounded(
    make_config, tmp_path: Path
) -> None:
    """A child that does read gets an answer to every request (refusals beyond the bound)."""
    record = tmp_path / "record.jsonl"
    script = {
        "probe_requests": ["fs/read_text_file"] * 3,
        "text": "done",
        "record_file": str(record),
    }
    with anyio.fail_after(60):
        result, _ = await run_and_dispose(make_config(script))
    assert result == SubagentResult(
        stop_reason="completed",
        output="[fs/read_text_file -> -32601]" * 3 + "done",
    )


async def test_text_after_the_prompt_answer_is_not_output(make_config, caplog) -> None:
    script = {"text": "kept", "text_after_end": "y" * 49_000, "chunks": 49}
    with caplog.at_level(logging.DEBUG, logger="subagent_acp"), anyio.fail_after(60):
        result, _ = await run_and_dispose(make_config(script))
    assert result == SubagentResult(stop_reason="completed", output="kept")


async def test_a_200_megabyte_answer_is_cut_at_max_output_bytes(make_config) -> None:
    config = make_config({"stream_bytes": {"total": 200 * MB, "chunk": MB}})
    with anyio.fail_after(120):
        async with peak_rss_growth() as growth:
            result, disposed = await run_and_dispose(config)
    assert result.stop_reason == "completed"
    assert result.diagnostic is None
    assert result.output == "x" * (8 * MB) + CUT
    assert disposed is None
    assert growth[0] <= 64 * MB


async def test_the_output_bound_is_configurable_and_cuts_on_a_character(make_config) -> None:
    config = make_config({"text": "权限" * 10}, max_output_bytes=10)
    with anyio.fail_after(60):
        result, _ = await run_and_dispose(config)
    assert result == SubagentResult(stop_reason="completed", output="权限权" + CUT)


async def test_the_first_answer_wins_for_every_id(
    make_config, tmp_path: Path, caplog, wait_for_path: Callable[[Path], Awaitable[None]]
) -> None:
    """Every answer is sent twice, the second different: the first is the one that counts."""
    record = tmp_path / "record.jsonl"
    script = {"duplicate_answers": True, "text": "ok", "record_file": str(record)}
    with caplog.at_level(logging.DEBUG, logger="subagent_acp"), anyio.fail_after(60):
        result, _ = await run_and_dispose(make_config(script))
    assert result == SubagentResult(stop_reason="completed", output="ok")
    received = [json.loads(line) for line in record.read_text("utf-8").splitlines()]
    prompts = [m for m in received if m.get("method") == "session/prompt"]
    assert [m["params"]["sessionId"] for m in prompts] == ["fake-session-1"]
    dropped = [r for r in caplog.records if "repeated answer" in r.getMessage()]
    assert len(dropped) >= 2
    assert all("duplicate-session" not in r.getMessage() for r in caplog.records)
