"""The request's MCP servers reach the child's `session/new` exactly, or the start fails before it."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from subagent_acp import ACPProvider
from subagent_core import (
    MCPHTTPServerSpec,
    MCPSSEServerSpec,
    MCPStdioServerSpec,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
)

SECRET = "sk-MCP-TOKEN-31415"

STDIO = MCPStdioServerSpec(
    name="files", command="uvx", args=("mcp-server-files", "--root", "."), env={"TOKEN": SECRET}
)
HTTP = MCPHTTPServerSpec(
    name="docs", url="https://docs.example/mcp", headers={"Authorization": f"Bearer {SECRET}"}
)
SSE = MCPSSEServerSpec(name="old", url="http://127.0.0.1:9/sse")

WIRE = {
    "files": {
        "name": "files",
        "command": "uvx",
        "args": ["mcp-server-files", "--root", "."],
        "env": [{"name": "TOKEN", "value": SECRET}],
    },
    "docs": {
        "type": "http",
        "name": "docs",
        "url": "https://docs.example/mcp",
        "headers": [{"name": "Authorization", "value": f"Bearer {SECRET}"}],
    },
    "old": {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []},
}


def initialize_with(**mcp: bool) -> dict[str, object]:
    return {
        "protocolVersion": 1,
        "agentCapabilities": {"mcpCapabilities": mcp},
        "authMethods": [],
    }


def methods_and_params(record: Path) -> list[tuple[object, object]]:
    messages = [json.loads(line) for line in record.read_text("utf-8").splitlines()]
    return [(m.get("method"), m.get("params")) for m in messages if "method" in m]


@pytest.mark.parametrize(
    ("servers", "capabilities"),
    [
        ((STDIO,), {}),
        ((STDIO, HTTP, SSE), {"http": True, "sse": True}),
        ((HTTP,), {"http": True}),
    ],
)
async def test_the_child_receives_exactly_the_servers_sent(
    make_config, tmp_path: Path, servers, capabilities
) -> None:
    record = tmp_path / "record.jsonl"
    script = {
        "results": {"initialize": initialize_with(**capabilities)},
        "record_file": str(record),
        "text": "ok",
    }
    registry = SubagentRegistry()
    registry.register(ACPProvider(make_config(script)))
    request = SubagentRequest(prompt="go", mcp_servers=servers)
    with anyio.fail_after(60):
        run = await registry.start("acp", request)
        async with run:
            assert await run.result() == SubagentResult(stop_reason="completed", output="ok")
    new_session = methods_and_params(record)[1]
    assert new_session == (
        "session/new",
        {"cwd": str(tmp_path), "mcpServers": [WIRE[spec.name] for spec in servers]},
    )


@pytest.mark.parametrize(
    ("servers", "capabilities"),
    [((HTTP,), {}), ((STDIO, SSE), {"http": True}), ((HTTP, SSE), {"sse": True})],
)
async def test_a_child_without_the_capability_is_a_configuration_start_error(
    make_config, tmp_path: Path, servers, capabilities
) -> None:
    record = tmp_path / "record.jsonl"
    script = {
        "results": {"initialize": initialize_with(**capabilities)},
        "record_file": str(record),
    }
    registry = SubagentRegistry()
    registry.register(ACPProvider(make_config(script)))
    with anyio.fail_after(60), pytest.raises(SubagentStartError) as caught:
        await registry.start("acp", SubagentRequest(prompt="go", mcp_servers=servers))
    expected = "Subagent failure (provider: acp; stage: new-session; category: configuration)"
    assert (str(caught.value), caught.value.diagnostic) == (expected, expected)
    assert [method for method, _ in methods_and_params(record)] == ["initialize"]
    assert SECRET not in repr(caught.value)
