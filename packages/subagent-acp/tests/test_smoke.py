from __future__ import annotations

import anyio
from subagent_core import SubagentRequest


async def test_completes_with_streamed_text(make_config, registry_for) -> None:
    registry = registry_for(make_config({"text": "hello world", "chunks": 4}))
    with anyio.fail_after(30):
        run = await registry.start("acp", SubagentRequest(prompt="hi"))
        async with run:
            result = await run.result()
    assert result.stop_reason == "completed"
    assert result.output == "hello world"
    assert result.diagnostic is None
