"""The baseline: a minimal ACP client written directly on the `acp` SDK.

What a user without `subagent-acp` would write: spawn the agent with asyncio, wrap its pipes in
`ClientSideConnection`, run initialize / session/new / session/prompt, collect the message
text, close stdin and wait for the exit. No line cap, no race against exit, no tree teardown.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from acp import PROTOCOL_VERSION
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from acp.schema import (
    AgentMessageChunk,
    ClientCapabilities,
    DeniedOutcome,
    RequestPermissionResponse,
    TextContentBlock,
)

_STREAM_LIMIT = 16 * 1024 * 1024
"""asyncio's default 64 KiB line limit would refuse the 5 MB chunk."""


@dataclass(slots=True)
class _Collector:
    parts: list[str] = field(default_factory=list[str])

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            self.parts.append(update.content.text)

    async def request_permission(self, *args: Any, **kwargs: Any) -> RequestPermissionResponse:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


@dataclass(frozen=True, slots=True)
class RawRun:
    """What one raw run produced and how long its prompt phase took."""

    stop_reason: str
    output: str
    prompt_seconds: float


async def _spawn(argv: Sequence[str], cwd: str) -> asyncio.subprocess.Process:
    """The child on asyncio pipes, as the raw `acp` client takes them (no containment: the floor)."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=cwd,
        env=dict(os.environ),
        limit=_STREAM_LIMIT,
    )
    return proc


async def raw_run(argv: Sequence[str], cwd: str, prompt: str = "bench") -> RawRun:
    """One whole run: spawn, handshake, prompt, close stdin, wait for exit."""
    proc = await _spawn(argv, cwd)
    assert proc.stdin is not None
    assert proc.stdout is not None
    collector = _Collector()
    conn = ClientSideConnection(cast(Client, collector), proc.stdin, proc.stdout)
    try:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
        )
        session = await conn.new_session(cwd=cwd, mcp_servers=[])
        started = time.perf_counter()
        response = await conn.prompt(
            session_id=session.session_id, prompt=[TextContentBlock(type="text", text=prompt)]
        )
        prompt_seconds = time.perf_counter() - started
    finally:
        await conn.close()
        proc.stdin.close()
        await proc.wait()
    return RawRun(str(response.stop_reason), "".join(collector.parts), prompt_seconds)


@dataclass(slots=True)
class _FirstUpdate:
    """Notes the clock at the first `session/update` of the prompt."""

    at: float | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if self.at is None:
            self.at = time.perf_counter()

    async def request_permission(self, *args: Any, **kwargs: Any) -> RequestPermissionResponse:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


async def raw_first_update(argv: Sequence[str], cwd: str, prompt: str = "bench") -> float:
    """Seconds from `session/new` to the first update, on a child already up and initialized.

    The floor a pool of warm children can approach: spawn and `initialize` happen before the
    clock, so only the session, the prompt and the first update are timed.
    """
    proc = await _spawn(argv, cwd)
    assert proc.stdin is not None
    assert proc.stdout is not None
    first = _FirstUpdate()
    conn = ClientSideConnection(cast(Client, first), proc.stdin, proc.stdout)
    try:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
        )
        started = time.perf_counter()
        session = await conn.new_session(cwd=cwd, mcp_servers=[])
        await conn.prompt(
            session_id=session.session_id, prompt=[TextContentBlock(type="text", text=prompt)]
        )
    finally:
        await conn.close()
        proc.stdin.close()
        await proc.wait()
    if first.at is None:
        raise RuntimeError("the child sent no update")
    return first.at - started
