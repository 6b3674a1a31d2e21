"""`harness acp-agent` on stdio: the SDK's transport over our streams, signals, shutdown.

stdin EOF, SIGTERM and SIGINT cancel every turn, wait (bounded) for their cleanup, answer every
request already read, and exit 0.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.abc
from acp.core import AgentSideConnection
from subagent_core.kit import open_stdio_streams

from harness._config.endpoint import ResolvedEndpoint, resolve_endpoint
from harness._config.loading import load_config

from .acp_server import HarnessACPAgent
from .conversation_store import SessionMode as ModeId
from .conversation_store import SessionStore
from .host_logging import prepare_server
from .stdin_lines import stdin_lines

_log = logging.getLogger("harness.acp_agent")

SHUTDOWN_GRACE_SECONDS = 15.0
"""How long EOF/SIGTERM waits for cancelled turns to clean up their commands and children."""


async def _watch_signals(agent: HarnessACPAgent, scope: anyio.CancelScope) -> None:
    if sys.platform == "win32":
        return
    import signal

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            agent.cancel_all()
            scope.cancel()
            return


class _StdioTransport:
    """The SDK's message-level `Transport` over our stdin/stdout (bounded input lines).

    It counts the client's requests that have no response yet, so that at stdin EOF (a client
    that wrote its requests and closed its end) every request read is still answered before
    the connection closes.
    """

    def __init__(
        self, receive: anyio.abc.ByteReceiveStream, send: anyio.abc.ByteSendStream
    ) -> None:
        self._lines = stdin_lines(receive)
        self._send = send
        self._unanswered = 0
        self._answered = anyio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        try:
            await self._send.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            _log.debug("dropping an outgoing message: stdout is gone")
        finally:
            if "id" in message and "method" not in message and self._unanswered > 0:
                self._unanswered -= 1
                self._answered.set()

    async def receive(self) -> dict[str, Any] | None:
        async for line in self._lines:
            try:
                message = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                _log.warning("ignoring an input line that is not JSON")
                continue
            if isinstance(message, dict):
                if "id" in message and "method" in message:
                    self._unanswered += 1
                return cast(dict[str, Any], message)
        return None

    async def wait_answered(self) -> None:
        """Returns once every request read so far has had its response sent."""
        while self._unanswered > 0:
            self._answered = anyio.Event()
            await self._answered.wait()

    async def close(self) -> None:
        """stdin and stdout belong to `open_stdio_streams`, which restores them on exit."""


async def _serve(agent: HarnessACPAgent) -> None:
    async with open_stdio_streams() as (receive, send):
        transport = _StdioTransport(receive, send)
        conn = AgentSideConnection(
            cast(Any, agent),
            transport,
            listening=False,
            use_unstable_protocol=True,
        )
        async with anyio.create_task_group() as tg:

            async def listen() -> None:
                await conn.listen()
                tg.cancel_scope.cancel()

            tg.start_soon(listen)
            tg.start_soon(_watch_signals, agent, tg.cancel_scope)
        agent.cancel_all()
        with anyio.move_on_after(SHUTDOWN_GRACE_SECONDS, shield=True):
            await agent.wait_idle()
            # Requests read before EOF are answered (cancelled turns answer `cancelled`).
            await transport.wait_answered()
        with anyio.move_on_after(2.0, shield=True):
            await conn.close()


def serve_acp(
    *,
    endpoint: ResolvedEndpoint,
    mode: ModeId,
    ask_permission: bool,
    max_steps: int,
    state_dir: Path,
) -> int:
    """Serves until stdin EOF, SIGTERM or SIGINT; returns the exit code (0)."""
    agent = HarnessACPAgent(
        endpoint=endpoint,
        mode=mode,
        ask_permission=ask_permission,
        max_steps=max_steps,
        store=SessionStore(state_dir, "acp"),
    )
    anyio.run(_serve, agent, backend="asyncio")
    return 0


def acp_agent_command(
    *,
    mode: ModeId,
    model: str | None,
    base_url: str | None,
    ask_permission: bool,
    max_steps: int,
    config: Path | None,
    state_dir: Path | None,
    verbose: bool,
    log_file: Path | None,
) -> int:
    """`harness acp-agent`: the config, endpoint (a key is not required), host logs and state
    directory prepared, then `serve_acp`.

    Raises:
        UsageError: a bad config or base URL.
    """
    settings = load_config(config, workspace=Path.cwd())
    # Without a key the agent starts anyway and asks the client to authenticate.
    endpoint = resolve_endpoint(settings.model, base_url=base_url, model=model, require_key=False)
    state = prepare_server(state_dir=state_dir, verbose=verbose, log_file=log_file)
    return serve_acp(
        endpoint=endpoint,
        mode=mode,
        ask_permission=ask_permission,
        max_steps=max_steps,
        state_dir=state,
    )
