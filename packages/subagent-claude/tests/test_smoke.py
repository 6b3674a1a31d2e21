from __future__ import annotations

from collections.abc import Callable
from typing import Any

from subagent_claude import ClaudeConfig

MakeConfig = Callable[..., ClaudeConfig]


async def test_fake_pong(fake_config: MakeConfig, run_once: Any) -> None:
    result, disposed = await run_once(fake_config())
    assert result.stop_reason == "completed"
    assert result.output == "PONG"
    assert result.diagnostic is None
    assert disposed is None
