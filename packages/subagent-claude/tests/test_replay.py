"""The fake replays conversations captured from the real CLI; the provider reads them right.

The captured frames (`subagent_claude/testing/frames`) are what Claude Code 2.1.x wrote against
the loopback stub; the fake writes them verbatim, answering our control requests between.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from subagent_claude import ClaudeConfig
from subagent_claude.testing import captured
from subagent_core import MessageChunk, SubagentRequest, ThoughtChunk, ToolCallEvent

MakeConfig = Callable[..., ClaudeConfig]
P = "Subagent failure (provider: claude; stage: prompt; category: "


@pytest.mark.parametrize(
    ("name", "permission", "stop_reason", "diagnostic", "output"),
    [
        ("text", "reject", "completed", None, "PONG"),
        ("write", "allow", "completed", None, "wrote it"),
        (
            "write-deny",
            "reject",
            "completed",
            "Claude permission (policy: reject; tool kind: edit; decision: reject_once)",
            "wrote it",
        ),
        ("bash", "allow", "completed", None, "ran it"),
        (
            "bash-deny",
            "reject",
            "completed",
            "Claude permission (policy: reject; tool kind: execute; decision: reject_once)",
            "ran it",
        ),
        ("e403", "reject", "error", P + "authentication)", ""),
        ("nokey", "reject", "error", P + "authentication)", ""),
        ("e401", "reject", "error", P + "authentication)", ""),
        ("refusal", "reject", "refusal", None, None),
        ("maxtok", "reject", "max-tokens", None, None),
        ("thinking", "reject", "completed", None, "ok"),
        ("stall", "reject", "aborted", P + "unknown; stop reason: aborted)", ""),
    ],
)
async def test_replay(
    fake_config: MakeConfig,
    run_once: Any,
    name: str,
    permission: str,
    stop_reason: str,
    diagnostic: str | None,
    output: str | None,
) -> None:
    events: list[Any] = []
    config = fake_config({"replay": name}, permission=permission)
    result, disposed = await run_once(config, events=events, seconds=20)
    assert (result.stop_reason, result.diagnostic, disposed) == (stop_reason, diagnostic, None)
    if output is not None:
        assert result.output == output
    assert "SECRET" not in result.output
    assert "API Error" not in result.output
    if name == "thinking":
        assert any(isinstance(e, ThoughtChunk) for e in events)
    if name.startswith(("write", "bash")):
        assert [e.status for e in events if isinstance(e, ToolCallEvent)] == [
            "pending",
            "completed" if permission == "allow" else "failed",
        ]
    if name == "text":
        assert "".join(e.text for e in events if isinstance(e, MessageChunk)) == "PONG"


async def test_replay_structured_output(fake_config: MakeConfig, run_once: Any) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    request = SubagentRequest(prompt="go", output_schema=schema)
    result, _ = await run_once(fake_config({"replay": "schema"}), request)
    assert (result.stop_reason, json.loads(result.output)) == ("completed", {"answer": "PONG"})
    assert result.structured_output == {"answer": "PONG"}
    bad, _ = await run_once(fake_config({"replay": "schemabad"}), request)
    assert (bad.stop_reason, bad.diagnostic) == ("error", P + "output-schema)")


def test_the_fake_writes_the_captured_frame_shapes() -> None:
    """The fake's templates are the captured frames: same keys for every frame kind."""
    kinds = {(f["type"], f.get("subtype")) for f in captured("text")}
    assert {("control_response", None), ("system", "init"), ("assistant", None)} <= kinds
    assert ("result", "success") in kinds
    request = next(f for f in captured("write") if f["type"] == "control_request")
    assert request["request"]["subtype"] == "can_use_tool"
    assert {"tool_name", "input", "tool_use_id"} <= set(request["request"])
