"""A small stdio MCP server on the SDK's server side, for tests and demos.

Tools: `read_note` (annotated `readOnlyHint: true`: echoes a note) and `write_marker`
(not read-only: writes a file). `--behaviour` turns the server hostile when `read_note` is
called: `hang` (never answers), `flood` (endless stdout bytes without a newline), `crash`
(exits at once) or `grandchild` (starts a `setsid` grandchild holding the pipes, writes its
pid to `--pid-file`, then never answers).

    python -m model_agent.testing._mcp_server [--behaviour normal|hang|flood|crash|grandchild]

`mcp_test_server_command()` gives that argv for the current interpreter.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

Behaviour = Literal["normal", "hang", "flood", "crash", "grandchild"]
BEHAVIOURS: tuple[Behaviour, ...] = ("normal", "hang", "flood", "crash", "grandchild")

_FLOOD_CHUNK = b"x" * 65536


def mcp_test_server_command(
    behaviour: Behaviour = "normal", *, pid_file: Path | None = None
) -> tuple[str, ...]:
    """The argv that starts the test MCP server with `behaviour` under this interpreter."""
    argv = [sys.executable, "-m", "model_agent.testing._mcp_server", "--behaviour", behaviour]
    if pid_file is not None:
        argv += ["--pid-file", str(pid_file)]
    return tuple(argv)


def build_server(behaviour: Behaviour, pid_file: Path | None = None) -> MCPServer:
    """The server object: both tools, `read_note` misbehaving as `behaviour` says."""
    server = MCPServer("model-agent-test")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def read_note(name: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Read the note called `name` (read-only)."""
        await _misbehave(behaviour, pid_file)
        return f"note {name}: all good"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    async def write_marker(path: str, text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Write `text` to the file at the absolute `path`."""
        await anyio.Path(path).write_text(text, encoding="utf-8")
        return f"wrote {len(text)} characters"

    return server


async def _misbehave(behaviour: Behaviour, pid_file: Path | None) -> None:
    if behaviour == "hang":
        await anyio.sleep_forever()
    elif behaviour == "flood":
        while True:
            os.write(1, _FLOOD_CHUNK)
    elif behaviour == "crash":
        os._exit(3)
    elif behaviour == "grandchild":
        grandchild = subprocess.Popen(  # noqa: ASYNC220 - a test double; the spawn returns at once
            [sys.executable, "-c", "import time\nwhile True: time.sleep(60)"],
            start_new_session=True,
        )
        if pid_file is not None:
            pid_file.write_text(str(grandchild.pid), encoding="utf-8")
        await anyio.sleep_forever()


def main(argv: Sequence[str] | None = None) -> int:
    """Serves the test MCP server on stdio until its stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m model_agent.testing._mcp_server")
    parser.add_argument("--behaviour", choices=BEHAVIOURS, default="normal")
    parser.add_argument("--pid-file", type=Path, default=None)
    args = parser.parse_args(argv)
    build_server(args.behaviour, args.pid_file).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
