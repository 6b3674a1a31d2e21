"""The shared provider contract (`subagent_core.testing.conformance`) on the `model` provider.

The `model` provider runs its child in this process against the scripted model server, so the
fake is a scripted reply: `text` is the answer (`echo_prompt`: each turn's prompt),
`hang_at="turn"` hangs the first request's stream after the text, `flood` streams that many
reasoning deltas first. The checks about a child process of its own (spawn, handshake, startup
deadline, signals, escapees, a child killed between turns, the parent's SIGKILL) do not apply;
each says why when skipped.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

from model_agent import AgentConfig, ModelEndpoint, ModelProvider
from model_agent._model_run import ABORTED_BEFORE_START_TEXT
from model_agent.testing import open_scripted_model_server
from subagent_core.testing.conformance import (
    CheckName,
    ConformanceTarget,
    ProviderConformance,
    Scenario,
)

NO_CHILD = "in-process: the model provider starts no child process of its own"
NO_HANDSHAKE = "in-process: no child process and no handshake to bound, fail or cancel"
NO_IDLE = "the model client bounds each request by its phase timeouts and retries instead"


class ModelTarget(ConformanceTarget):
    aborted_text = ABORTED_BEFORE_START_TEXT
    skips: ClassVar[Mapping[CheckName, str]] = {
        "cancel-mid-handshake-rolls-back": NO_HANDSHAKE,
        "caller-cancel-mid-handshake-rolls-back": NO_HANDSHAKE,
        "startup-deadline": NO_HANDSHAKE,
        "exit-during-handshake": NO_HANDSHAKE,
        "missing-command": NO_HANDSHAKE,
        "idle-deadline": NO_IDLE,
        "eof-deaf-tree-ended": NO_CHILD,
        "term-trapping-tree-ended": NO_CHILD,
        "grandchild-holding-stdout-ended": NO_CHILD,
        "escaped-grandchild-ended": NO_CHILD,
        "parent-sigkill-leaves-nothing": NO_CHILD,
        "session-child-killed-between-turns": NO_CHILD,
        "session-parent-sigkill-leaves-nothing": NO_CHILD,
    }

    @asynccontextmanager
    async def open_provider(
        self, scenario: Scenario, workspace: Path
    ) -> AsyncGenerator[ModelProvider]:
        reply: dict[str, Any] = {"text": scenario.text, "echo_prompt": scenario.echo_prompt}
        if scenario.flood:
            reply.update(reasoning="x" * scenario.flood, reasoning_chunks=scenario.flood)
        replies = [reply]
        if scenario.hang_at == "turn":  # the first request goes silent, later ones answer
            replies.insert(0, {**reply, "hang": "after-text"})
        script = {"rules": [{"match": "", "replies": replies}]}
        async with open_scripted_model_server(script) as server:
            endpoint = ModelEndpoint(base_url=server.base_url, api_key="unused", model="scripted")
            yield ModelProvider(AgentConfig(endpoint=endpoint, workspace=workspace, mode="execute"))


class TestModelConformance(ProviderConformance):
    target = ModelTarget()
