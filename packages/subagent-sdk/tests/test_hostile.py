"""Hostile runtimes (real processes) cannot exhaust the parent: bounded memory, first answers
win, nothing after the turn end counts, the output is bounded, teardown is prompt."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_core import SubagentRequest, SubagentResult
from subagent_sdk import SDKProvider
from subagent_sdk.client import SDKClient, TransportClosedError
from subagent_sdk.testing import FakeScript

Hostile = Callable[..., SDKProvider]
Watch = Callable[[], AbstractAsyncContextManager[Any]]

CHILDREN = Path(__file__).parent / "children"

MIB = 1024 * 1024
MARKER = "\n[output truncated]"


def _transport(provider: str = "dsh-sdk") -> str:
    return f"Subagent failure (provider: {provider}; stage: session-run; category: transport)"


async def _run(sdk: SDKProvider, cwd: Path) -> tuple[SubagentResult, str | None]:
    run = await sdk.start(SubagentRequest(prompt="hi", cwd=cwd))
    try:
        result = await run.result()
    finally:
        disposed = await run.dispose()
    return result, disposed


async def test_100k_requests_and_never_reading_settle_as_transport_in_bounded_memory(
    hostile: Hostile, rss: Watch, tmp_path: Path
) -> None:
    """No task or answer per request: refusals beyond a small queue are dropped, the blocked
    refusal write ends the run as `transport`, and teardown does not scale with the flood."""
    sdk = hostile("flood-requests", "100000", write_timeout_seconds=1.0)
    with anyio.fail_after(60):
        async with rss() as watch:
            result, disposed = await _run(sdk, tmp_path)
    assert result == SubagentResult(stop_reason="error", output="", diagnostic=_transport())
    assert disposed is None
    assert watch.growth <= 64 * MIB


async def test_a_notification_flood_before_the_receipt_fails_the_run_in_bounded_memory(
    hostile: Hostile, rss: Watch, tmp_path: Path
) -> None:
    """The run's subscription holds at most 4096 unread notifications: a runtime flooding
    before it answers the prompt ends the run as `transport` instead of growing the parent."""
    with anyio.fail_after(60):
        async with rss() as watch:
            result, disposed = await _run(hostile("flood-notifications", "200000"), tmp_path)
    assert result == SubagentResult(stop_reason="error", output="", diagnostic=_transport())
    assert disposed is None
    assert watch.growth <= 64 * MIB


async def test_a_prompt_answered_twice_keeps_the_first_receipt(
    hostile: Hostile, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="subagent_sdk")
    with anyio.fail_after(30):
        result, disposed = await _run(hostile("answer-twice", "first"), tmp_path)
    assert result == SubagentResult(stop_reason="completed", output="the answer")
    assert disposed is None
    dropped = [r.getMessage() for r in caplog.records if r.getMessage().startswith("dropped")]
    assert len(dropped) == 1
    assert re.fullmatch(r"dropped a response without a waiting request \(\d+ bytes\)", dropped[0])
    assert "m-second" not in caplog.text


async def test_a_receipt_for_the_second_answer_settles_as_protocol(
    hostile: Hostile, tmp_path: Path
) -> None:
    """The runtime splices the message id of its second answer: the run's fresh session has no
    other prompt, so that receipt can never be ours and the run settles instead of waiting."""
    with anyio.fail_after(30):
        result, disposed = await _run(hostile("answer-twice", "second"), tmp_path)
    assert result == SubagentResult(
        stop_reason="error",
        output="",
        diagnostic="Subagent failure (provider: dsh-sdk; stage: session-run; category: protocol)",
    )
    assert disposed is None


async def test_a_200_mb_answer_is_cut_at_max_output_bytes(
    hostile: Hostile, rss: Watch, tmp_path: Path
) -> None:
    sdk = hostile("big-answer", str(200 * MIB))
    with anyio.fail_after(120):
        async with rss() as watch:
            result, disposed = await _run(sdk, tmp_path)
            output = result.output
            del result
    assert len(output) == 8 * MIB + len(MARKER)
    assert output.endswith("x" + MARKER)
    del output
    assert disposed is None
    assert watch.growth <= 64 * MIB


async def test_output_over_the_bound_is_cut_at_a_character_with_the_marker(
    provider: Callable[..., SDKProvider], tmp_path: Path
) -> None:
    text = "权" * 100
    with anyio.fail_after(30):
        from_message, _ = await _run(provider(FakeScript(text=text), max_output_bytes=50), tmp_path)
        from_deltas, _ = await _run(
            provider(FakeScript(text=text, deltas=7, final_message=False), max_output_bytes=50),
            tmp_path,
        )
    # 50 bytes kept: sixteen 3-byte characters, never a split one, then the marker.
    expected = "权" * 16 + MARKER
    assert from_message == SubagentResult(stop_reason="completed", output=expected)
    assert from_deltas == SubagentResult(stop_reason="completed", output=expected)


async def test_text_after_the_turn_end_is_not_output(
    provider: Callable[..., SDKProvider], tmp_path: Path
) -> None:
    script = FakeScript(text="the answer", deltas=2, stream_after_turn_end="LATE TEXT")
    with anyio.fail_after(30):
        result, _ = await _run(provider(script), tmp_path)
    assert result == SubagentResult(stop_reason="completed", output="the answer")


async def test_requests_to_the_client_are_refused_with_method_not_found(
    fake_client: Callable[..., SDKClient],
) -> None:
    """Runtime→client requests in the middle of a turn are refused and change nothing."""
    script = FakeScript(text="t", noise=["requests"], noise_at="prompt")
    with anyio.fail_after(30):
        async with fake_client(script) as client:
            run = await client.run_prompt("session-1", "hi")
    assert run.output == "t"


async def test_a_write_blocked_past_its_bound_ends_the_connection(tmp_path: Path) -> None:
    """The runtime never reads its stdin: a large request blocks, and after
    `write_timeout_seconds` the client is closed with `TransportClosedError`."""
    argv = [str(CHILDREN / "hostile_runtime.py"), "flood-requests", "0"]
    client = SDKClient(
        sys.executable,
        argv,
        write_timeout_seconds=0.5,
        eof_grace_seconds=0.5,
        term_grace_seconds=0.5,
        kill_grace_seconds=1.0,
    )
    with anyio.fail_after(30):
        async with client:
            await client.initialize(cwd=str(tmp_path), provider="p", model="m")
            await client.prompt("session-1", "hi")
            with pytest.raises(TransportClosedError):
                await client.request("echo", {"data": "x" * (4 * MIB)})
            assert client.closed
            with pytest.raises(TransportClosedError):
                await client.request("echo")


@pytest.mark.parametrize("session", ["", "setsid"])
async def test_a_grandchild_holding_stdout_does_not_keep_the_run_from_settling(
    hostile: Hostile, tmp_path: Path, session: str
) -> None:
    """The leader exits with 3 while its grandchild (in the group, or `setsid`) keeps stdout
    open: the client fails its waiters on the leader's exit and the run settles as a process
    exit, with the figures; dispose leaves nothing (the leak guard checks)."""
    with anyio.fail_after(30):
        result, disposed = await _run(hostile("orphan-stdout", session), tmp_path)
    assert result == SubagentResult(
        stop_reason="error",
        output="partial",
        diagnostic=(
            "Subagent failure (provider: dsh-sdk; stage: session-run; category: transport; "
            "exit code: 3)"
        ),
    )
    assert disposed is None
