"""`harness mcp` (issue 40): a `delegate` tool call vs the same run in-process, and start-up.

- A `delegate` call through `harness mcp` (the official client over stdio, the server started
  and warmed before the clock) to the fake ACP child, vs the same call's work in this process:
  the server's own code (`build_call_registry` on the same root and `harness.toml`, then
  `run_delegate`), timed from the request to the result. Target: at most 1.1× the in-process
  run plus 15 ms, read as `mcp / (1.1 × in-process + 15 ms) <= 1`.
- Process start -> `initialize` answered: `harness mcp` (the console script) vs a bare server
  on the official SDK (`mcp.server.lowlevel.Server` with one empty tool list over the SDK's
  `stdio_server`), each spawned fresh per round with the request already in its stdin.
  Target <= 1.3×.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import anyio
from _context import PYTHON, BenchError, Context
from _report import Section, Target
from _timing import Sample, Subject, paired, ratios
from case_harness import harness_path
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

TEXT = "hello from the fake child"

BARE_SERVER = """
import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[])


async def main():
    server = Server("bare", on_list_tools=list_tools)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


anyio.run(main)
"""

INITIALIZE = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
    )
    + "\n"
)


def _root(ctx: Context) -> Path:
    """A root holding `harness.toml` with the fake ACP child as the provider `fake`."""
    root = ctx.work / "mcp-root"
    root.mkdir(exist_ok=True)
    script = ctx.write_json("mcp-fake.json", {"text": TEXT})
    (root / "harness.toml").write_text(
        "[providers.fake]\n"
        'kind = "acp"\n'
        f"command = {json.dumps(PYTHON)}\n"
        'args = ["-m", "subagent_acp.testing"]\n'
        f"env = {{ ACP_FAKE_SCRIPT_FILE = {json.dumps(script)} }}\n",
        "utf-8",
    )
    return root.resolve()


def in_process(root: Path) -> Subject:
    """The server's own work for one `delegate` call, in this process."""
    from harness._agent_servers.mcp_activity import Activity
    from harness._agent_servers.mcp_calls import prepare_delegate
    from harness._agent_servers.mcp_options import ServeOptions
    from harness._agent_servers.mcp_runs import run_delegate
    from harness._agent_servers.mcp_tools import DelegateArgs
    from harness._registry.child_stderr import child_stderr_logs

    options = ServeOptions(root=root)
    logs = child_stderr_logs(live=False)

    async def subject() -> float:
        started = time.perf_counter()
        prepared = prepare_delegate(options, logs, DelegateArgs(agent="fake", prompt="bench"))
        outcome = await run_delegate(prepared, Activity())
        elapsed = time.perf_counter() - started
        if outcome.result.output != TEXT:
            raise BenchError(f"in-process run ended {outcome.result.stop_reason}")
        return elapsed

    return subject


def through_mcp(session: ClientSession) -> Subject:
    async def subject() -> float:
        started = time.perf_counter()
        result = await session.call_tool("delegate", {"agent": "fake", "prompt": "bench"})
        elapsed = time.perf_counter() - started
        content: dict[str, object] = result.structured_content or {}
        if result.is_error or content.get("output") != TEXT:
            raise BenchError("the delegate tool call did not complete")
        return elapsed

    return subject


def to_initialize(argv: list[str], cwd: Path) -> Subject:
    """Spawn -> the `initialize` response line read (the request waits in its stdin)."""

    async def subject() -> float:
        started = time.perf_counter()
        process = await anyio.open_process(argv, cwd=cwd, stderr=None)
        try:
            assert process.stdin is not None
            assert process.stdout is not None
            await process.stdin.send(INITIALIZE.encode())
            data = b""
            with anyio.fail_after(60):
                while b"\n" not in data:
                    data += await process.stdout.receive()
            elapsed = time.perf_counter() - started
            if b'"result"' not in data.split(b"\n", 1)[0]:
                raise BenchError("initialize was not answered")
            await process.stdin.aclose()
            with anyio.fail_after(30):
                await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        return elapsed

    return subject


async def mcp(ctx: Context) -> list[Section]:
    root = _root(ctx)
    call = Section(
        "harness mcp: a delegate tool call vs the same run in-process",
        notes=[
            "MCP: `session.call_tool('delegate', …)` with the official client over stdio to "
            "`harness mcp -w ROOT` (started, initialized and warmed by one call before the "
            "clock), the fake ACP child answering at once. In-process: the server's own work "
            "for that call in this process (`prepare_delegate` on the same root and config, "
            "then `run_delegate`: the child started, its result, its tree disposed). Target "
            "<= 1.1x in-process + 15 ms, shown as MCP / (1.1 x in-process + 15 ms).",
        ],
    )
    state = ctx.work / "mcp-state"
    state.mkdir(exist_ok=True)
    env = {**os.environ, "HARNESS_STATE_DIR": str(state)}
    params = StdioServerParameters(command=harness_path(), args=["mcp", "-w", str(root)], env=env)
    previous = os.environ.get("HARNESS_STATE_DIR")
    os.environ["HARNESS_STATE_DIR"] = str(state)  # the in-process side logs there too
    try:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            samples = await paired(
                {"mcp": through_mcp(session), "in-process": in_process(root)},
                warmup=2,
                repeat=ctx.reps(20, 4),
            )
    finally:
        if previous is None:
            os.environ.pop("HARNESS_STATE_DIR", None)
        else:
            os.environ["HARNESS_STATE_DIR"] = previous
    mcp_s, local = samples["mcp"], samples["in-process"]
    call.add("delegate through harness mcp", mcp_s.scaled(1000), "ms")
    call.add("the same run in-process", local.scaled(1000), "ms")
    call.add(
        "added by MCP", Sample(tuple(a - b for a, b in _pairs(mcp_s, local))).scaled(1000), "ms"
    )
    bound = Sample(tuple(1.1 * value + 0.015 for value in local.values))
    call.add("MCP / (1.1x in-process + 15 ms)", ratios(mcp_s, bound), "×", Target("<=", 1.0))

    start = Section(
        "harness mcp: process start -> initialize answered vs a bare mcp SDK server",
        notes=[
            "Each spawned fresh per round with the `initialize` request already written to "
            "its stdin; timed to the response line. harness: the `harness mcp` console "
            "script. Bare: `mcp.server.lowlevel.Server` with an empty tool list over the "
            "SDK's `stdio_server`, in a script file. Both exit at stdin EOF (untimed).",
        ],
    )
    bare = ctx.work / "bare_mcp_server.py"
    bare.write_text(BARE_SERVER, "utf-8")
    started = await paired(
        {
            "harness": to_initialize([harness_path(), "mcp", "-w", str(root)], root),
            "bare": to_initialize([PYTHON, str(bare)], root),
        },
        warmup=1,
        repeat=ctx.reps(12, 3),
    )
    start.add("harness mcp: start -> initialize", started["harness"].scaled(1000), "ms")
    start.add("bare SDK server: start -> initialize", started["bare"].scaled(1000), "ms")
    start.add(
        "harness mcp / bare server",
        ratios(started["harness"], started["bare"]),
        "×",
        Target("<=", 1.3),
    )
    return [call, start]


def _pairs(a: Sample, b: Sample) -> list[tuple[float, float]]:
    return list(zip(a.values, b.values, strict=True))
