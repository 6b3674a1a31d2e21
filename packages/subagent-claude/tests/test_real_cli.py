"""The real Claude Code CLI (the `[cli]` extra) against the loopback Messages stub, keyless."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from subagent_claude import ClaudeConfig
from subagent_claude.testing import MessagesStub, text_turn
from subagent_core import MessageChunk, UsageEvent

RealConfig = Callable[..., ClaudeConfig]


async def test_text_completes_with_usage_and_cost(real_config: RealConfig, run_once: Any) -> None:
    events: list[Any] = []
    with MessagesStub([text_turn("PONG", input_tokens=11, output_tokens=7)]) as stub:
        result, disposed = await run_once(real_config(stub), events=events)
    assert result.stop_reason == "completed"
    assert result.output == "PONG"
    assert result.diagnostic is None
    assert disposed is None
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (11, 7)
    assert "".join(e.text for e in events if isinstance(e, MessageChunk)) == "PONG"
    assert any(isinstance(e, UsageEvent) for e in events)
    print(result.usage)
