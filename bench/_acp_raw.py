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


@dataclass(slots=True)
class _UpChild:
    proc: asyncio.subprocess.Process
    conn: ClientSideConnection
    first: _FirstUpdate


async def _bring_up(argv: Sequence[str], cwd: str) -> _UpChild:
    """Spawns the child and completes `initialize`: a child already up."""
    proc = await _spawn(argv, cwd)
    assert proc.stdin is not None
    assert proc.stdout is not None
    first = _FirstUpdate()
    conn = ClientSideConnection(cast(Client, first), proc.stdin, proc.stdout)
    try:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
        )
    except BaseException:
        await _close(_UpChild(proc, conn, first))
        raise
    return _UpChild(proc, conn, first)


async def _close(child: _UpChild) -> None:
    await child.conn.close()
    assert child.proc.stdin is not None
    child.proc.stdin.close()
    await child.proc.wait()


class RawFirstUpdate:
    """The floor a pool of warm children can approach, measured like one.

    Each measurement uses a child spawned and past `initialize` before the clock, and only
    `session/new`, the prompt and the first update are timed. The next child is brought up
    right after (untimed), so it then sits idle while the other subjects of the round run,
    as a pooled child does: a child measured the instant its `initialize` was answered is still
    hot in the caches and would flatter the floor. `aclose()` ends the child held last.
    """

    def __init__(self, argv: Sequence[str], cwd: str, prompt: str = "bench") -> None:
        self._argv = list(argv)
        self._cwd = cwd
        self._prompt = prompt
        self._next: _UpChild | None = None

    async def __call__(self) -> float:
        child = self._next or await _bring_up(self._argv, self._cwd)
        self._next = None
        try:
            started = time.perf_counter()
            session = await child.conn.new_session(cwd=self._cwd, mcp_servers=[])
            await child.conn.prompt(
                session_id=session.session_id,
                prompt=[TextContentBlock(type="text", text=self._prompt)],
            )
        finally:
            await _close(child)
        if child.first.at is None:
            raise RuntimeError("the child sent no update")
        self._next = await _bring_up(self._argv, self._cwd)
        return child.first.at - started

    async def aclose(self) -> None:
        if self._next is not None:
            child, self._next = self._next, None
            await _close(child)
