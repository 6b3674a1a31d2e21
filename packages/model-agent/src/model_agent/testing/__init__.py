"""Test support: the scripted OpenAI-compatible model server and a stdio MCP test server.

```python
async with open_scripted_model_server({"rules": [{"match": "hi", "replies": [{"text": "Hi!"}]}]}) as server:
    endpoint = ModelEndpoint(base_url=server.base_url, api_key="unused")
```

Also a process: `python -m model_agent.testing --script FILE.json [--port N]` prints its base
URL as the first stdout line and serves until interrupted.
"""

from __future__ import annotations

import argparse
import collections.abc
import sys

import anyio

from ._mcp_server import BEHAVIOURS as MCP_TEST_SERVER_BEHAVIOURS
from ._mcp_server import Behaviour as MCPTestServerBehaviour
from ._mcp_server import mcp_test_server_command as mcp_test_server_command
from ._script import Reply as Reply
from ._script import Rule as Rule
from ._script import ScriptedToolCall as ScriptedToolCall
from ._script import ScriptError as ScriptError
from ._script import load_script as load_script
from ._script import parse_script as parse_script
from ._scripted_server import ScriptedModelServer as ScriptedModelServer
from ._scripted_server import open_scripted_model_server as open_scripted_model_server

__all__ = [
    "MCP_TEST_SERVER_BEHAVIOURS",
    "MCPTestServerBehaviour",
    "Reply",
    "Rule",
    "ScriptError",
    "ScriptedModelServer",
    "ScriptedToolCall",
    "load_script",
    "main",
    "mcp_test_server_command",
    "open_scripted_model_server",
    "parse_script",
    "serve_script",
]


async def serve_script(rules: collections.abc.Sequence[Rule], *, port: int = 0) -> None:
    """Serves `rules` until cancelled, printing the base URL as the first stdout line."""
    async with open_scripted_model_server(rules, port=port) as server:
        print(server.base_url, flush=True)
        await anyio.sleep_forever()


def main(argv: collections.abc.Sequence[str] | None = None) -> int:
    """Command-line entry: `--script FILE.json [--port N]`; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m model_agent.testing",
        description="Serve a scripted OpenAI-compatible streaming model on 127.0.0.1.",
    )
    parser.add_argument("--script", required=True, help="the JSON script file")
    parser.add_argument("--port", type=int, default=0, help="TCP port (default: ephemeral)")
    args = parser.parse_args(argv)
    try:
        rules = load_script(args.script)
    except ScriptError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        anyio.run(lambda: serve_script(rules, port=args.port))
    except KeyboardInterrupt:
        return 0
    return 0
