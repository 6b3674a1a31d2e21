"""`harness mcp`: the harness as an MCP server on stdio, whose tools run contained children.

```
host ─stdin─▶ mcp_stdio (bounded lines) ─▶ mcp.server.lowlevel.Server (the SDK: handshake,
                                             dispatch, cancellation, progress)
                 tools/list ─▶ mcp_tools.TOOLS (JSON Schemas in and out)
                 tools/call ─▶ mcp_handlers.Tools ─▶ mcp_calls (refusals, before anything runs)
                                                    ─▶ mcp_runs (slots, one run, background runs)
                                                    ─▶ mcp_results (what the host gets back)
                               progress: mcp_activity (closed facts) every ≤ 10 s
host ◀─stdout── the SDK's frames only (logs: stderr at WARNING, --verbose, --log-file)
```

Only the SDK and this module are imported before `initialize` is answered; the tools (the
registry, the providers' configs, the fan-out) load once the client says it is initialized,
on a worker thread, so the first call does not pay for them either.

Ending: stdin EOF (how Claude Code ends its servers; also a client that was killed), SIGTERM,
SIGINT and SIGHUP cancel every call and background run; each disposes its child's whole
process tree (shielded, bounded by the providers' graces) before the process exits 0. A call
the client cancels (`notifications/cancelled`) is cancelled the same way and gets no answer.
If this process is killed outright, subagent-core's containment guards kill every child tree.
"""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server

from harness._version import VERSION

from .host_logging import configure_host_logging
from .mcp_options import ServeOptions, ToolError
from .mcp_stdio import open_mcp_stdio

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from harness._registry.overrides import ApproveChoice

    from .mcp_handlers import Tools

_log = logging.getLogger("harness.mcp")

SERVER_NAME = "harness"
INSTRUCTIONS = (
    "Delegate tasks to other coding agents (Claude Code, Codex, Gemini, …) as contained "
    "child processes. `agents` lists what is installed; `delegate` runs one child and returns "
    "its answer; `delegate_start` / `delegate_result` for long tasks; `session` continues a "
    "conversation across calls; `fanout` runs one task on several agents in separate git "
    "worktrees and compares their patches."
)
_HANDLERS = "harness._agent_servers.mcp_handlers"


class _Server:
    """The tools' side of the SDK server: loads the tool machinery on first need."""

    def __init__(self, options: ServeOptions, runs: anyio.abc.TaskGroup) -> None:
        self._options = options
        self._runs = runs
        self._tools: Tools | None = None

    def _machinery(self) -> Tools:
        if self._tools is None:
            module: Any = importlib.import_module(_HANDLERS)
            self._tools = module.Tools(self._options, self._runs)
        assert self._tools is not None
        return self._tools

    async def warm(self, ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        """After `initialize`: load the tools on a worker thread (the loop keeps serving)."""
        if sys.modules.get(_HANDLERS) is None:
            self._runs.start_soon(anyio.to_thread.run_sync, importlib.import_module, _HANDLERS)

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        from .mcp_schemas import TOOLS

        tools = [
            types.Tool(
                name=spec.name,
                description=spec.description,
                input_schema=spec.input_schema,
                output_schema=spec.output_schema,
                annotations=types.ToolAnnotations(
                    read_only_hint=spec.read_only,
                    destructive_hint=not spec.read_only,
                    open_world_hint=not spec.read_only,
                ),
            )
            for spec in TOOLS
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        from .mcp_schemas import TOOL_NAMES
        from .mcp_tools import ToolArgumentError

        if params.name not in TOOL_NAMES:
            return _error(f"harness: there is no tool named {_plain(params.name)}")

        async def report(progress: float, message: str) -> None:
            try:
                await ctx.session.report_progress(progress, None, message)
            except Exception:
                # A notification that cannot go out must not end the call it reports on.
                _log.debug("a progress notification was not sent", exc_info=True)

        try:
            tools = self._machinery()
            structured, text, is_error = await tools.call(params.name, params.arguments, report)
        except (ToolError, ToolArgumentError) as error:
            return _error(f"harness: {error}")
        except Exception:
            # Our own fault: the cause goes to the host log; the client gets fixed words.
            _log.exception("the %s tool failed", params.name)
            return _error("harness: the tool failed inside the server (see its log)")
        return types.CallToolResult(
            content=[types.TextContent(text=text)],
            structured_content=structured,
            is_error=is_error,
        )


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _plain(name: str) -> str:
    short = name[:64]
    return f'"{short}"' if short.isprintable() and short.isascii() else "(unprintable)"


async def _watch_signals(scope: anyio.CancelScope) -> None:
    if sys.platform == "win32":
        return
    import signal

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for received in signals:
            _log.info("stopping on signal %d", received)
            scope.cancel()
            return


async def serve_mcp(options: ServeOptions) -> None:
    """Serves until stdin ends or a signal; every child is gone when this returns."""
    async with anyio.create_task_group() as runs:
        tools = _Server(options, runs)
        server = Server(
            SERVER_NAME,
            version=VERSION,
            instructions=INSTRUCTIONS,
            on_list_tools=tools.list_tools,
            on_call_tool=tools.call_tool,
        )
        server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, tools.warm
        )
        try:
            async with open_mcp_stdio() as (read, write), anyio.create_task_group() as tg:
                tg.start_soon(_watch_signals, tg.cancel_scope)
                await server.run(read, write, server.create_initialization_options())
                tg.cancel_scope.cancel()
        finally:
            # Every background run: cancelled into its shielded dispose before we return.
            runs.cancel_scope.cancel()
    _log.debug("stopped")


def mcp_command(
    *,
    workspace: Path | None,
    config: Path | None,
    approve: str,
    max_runs: int,
    max_queued: int,
    model: str | None,
    base_url: str | None,
    verbose: bool,
    log_file: Path | None,
) -> int:
    """`harness mcp`: the root checked, host logs set up, then `serve_mcp` until the end.

    Raises:
        UsageError: the root is not an accessible directory.
    """
    from harness._config.paths import workspace_path

    root = workspace_path(workspace)
    configure_host_logging(verbose=verbose, log_file=log_file)
    options = ServeOptions(
        root=root,
        config=None if config is None else config.resolve(),
        approve=cast("ApproveChoice", approve),
        max_runs=max_runs,
        max_queued=max_queued,
        base_url=base_url,
        model=model,
    )
    anyio.run(serve_mcp, options, backend="asyncio")
    return 0
