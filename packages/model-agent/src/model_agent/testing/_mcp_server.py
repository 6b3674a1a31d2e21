"""A small stdio MCP server on the SDK's server side, for tests and demos.

Tools: `read_note` (annotated `readOnlyHint: true`: echoes a note) and `write_marker`
(not read-only: writes a file). `--behaviour` turns the server hostile when `read_note` is
called: `hang` (never answers), `flood` (endless stdout bytes without a newline), `crash`
(exits at once) or `grandchild` (starts a `setsid` grandchild holding the protocol's stdout,
writes its pid to `--pid-file`, then never answers). `silent` never answers anything, not even
`initialize`, and ignores the end of its stdin. `noisy` writes lines that are not JSON-RPC
(text, bad UTF-8, an answer to a request never made) before answering normally.

    python -m model_agent.testing._mcp_server [--pid-file FILE] [--http]
        [--behaviour normal|hang|flood|crash|grandchild|silent|noisy]

`mcp_test_server_command()` gives that argv for the current interpreter (importing it does
not import the MCP SDK).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

Behaviour = Literal["normal", "hang", "flood", "crash", "grandchild", "silent", "noisy"]
BEHAVIOURS: tuple[Behaviour, ...] = (
    "normal",
    "hang",
    "flood",
    "crash",
    "grandchild",
    "silent",
    "noisy",
)

_FLOOD_CHUNK = b"x" * 65536


def mcp_test_server_command(
    behaviour: Behaviour = "normal", *, pid_file: Path | None = None, http: bool = False
) -> tuple[str, ...]:
    """The argv that starts the test MCP server with `behaviour` under this interpreter.

    With `http`, it serves streamable HTTP on 127.0.0.1 (an ephemeral port) instead of stdio
    and prints its endpoint URL as the first stdout line.
    """
    argv = [sys.executable, "-m", "model_agent.testing._mcp_server", "--behaviour", behaviour]
    if pid_file is not None:
        argv += ["--pid-file", str(pid_file)]
    if http:
        argv.append("--http")
    return tuple(argv)


def build_server(behaviour: Behaviour, pid_file: Path | None = None, *, wire: int = 1) -> MCPServer:
    """The server object: both tools, `read_note` misbehaving as `behaviour` says.

    `wire` is a descriptor of the protocol's stdout: the SDK diverts fd 1 away from the wire
    while it serves, so the flood and the grandchild need their own duplicate to reach it.
    """
    # Imported here: `model_agent.testing` stays cheap to import for scripted-model tests.
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer("model-agent-test")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def read_note(name: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Read the note called `name` (read-only)."""
        await _misbehave(behaviour, pid_file, wire)
        return f"note {name}: all good"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    async def write_marker(path: str, text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Write `text` to the file at the absolute `path`."""
        await anyio.Path(path).write_text(text, encoding="utf-8")
        return f"wrote {len(text)} characters"

    return server


async def _misbehave(behaviour: Behaviour, pid_file: Path | None, wire: int) -> None:
    if behaviour == "hang":
        await anyio.sleep_forever()
    elif behaviour == "flood":
        while True:
            os.write(wire, _FLOOD_CHUNK)
    elif behaviour == "noisy":
        os.write(wire, b'not json\n\xff\xfe\n{"jsonrpc": "2.0", "id": 999, "result": {}}\n')
    elif behaviour == "crash":
        os._exit(3)
    elif behaviour == "grandchild":
        grandchild = subprocess.Popen(  # noqa: ASYNC220 - a test double; the spawn returns at once
            [sys.executable, "-c", "import time\nwhile True: time.sleep(60)"],
            stdout=wire,
            start_new_session=True,
        )
        if pid_file is not None:
            await anyio.Path(pid_file).write_text(str(grandchild.pid), encoding="utf-8")
        await anyio.sleep_forever()


def serve_http(server: MCPServer) -> None:
    """Serves `server` over streamable HTTP on 127.0.0.1 until interrupted; prints its URL."""
    # uvicorn comes with the MCP SDK, which serves HTTP with it too; the socket is bound here
    # so the ephemeral port is known before the first request.
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    print(f"http://127.0.0.1:{port}/mcp", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    anyio.run(lambda: uvicorn.Server(config).serve([listener]))


def main(argv: Sequence[str] | None = None) -> int:
    """Serves the test MCP server on stdio until its stdin closes (or HTTP with `--http`)."""
    parser = argparse.ArgumentParser(prog="python -m model_agent.testing._mcp_server")
    parser.add_argument("--behaviour", choices=BEHAVIOURS, default="normal")
    parser.add_argument("--pid-file", type=Path, default=None)
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1")
    args = parser.parse_args(argv)
    if args.http:
        try:
            serve_http(build_server(args.behaviour, args.pid_file))
        except KeyboardInterrupt:
            pass
        return 0
    if args.behaviour == "silent":
        sys.stdin.buffer.read()
        anyio.run(anyio.sleep_forever)
    wire = os.dup(1)
    build_server(args.behaviour, args.pid_file, wire=wire).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
