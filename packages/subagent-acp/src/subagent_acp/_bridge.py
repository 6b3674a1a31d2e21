"""The `acp` SDK connection over a managed process's streams.

The SDK gets a message-level transport of ours (`_wire.ChildTransport`: bounded framing,
bounded inbound requests, ordered updates) and a client whose handlers only report safe facts
back to the child's turns. The SDK's own waits are never trusted to end: every request runs
inside a scope the lifecycle cancels on process exit, cancellation and the deadlines.

Importing this module imports `acp` (slow: pydantic builds the schema), so the provider loads it
lazily on its first start.
"""

from __future__ import annotations

from typing import Literal, cast

from acp import PROTOCOL_VERSION, RequestError
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    HttpMcpServer,
    InitializeResponse,
    LoadSessionResponse,
    McpServerStdio,
    NewSessionResponse,
    ResumeSessionResponse,
    SseMcpServer,
    TextContentBlock,
    Usage,
)
from subagent_core.kit import ChildPipes

from ._client import ACPClient
from ._facts import AUTHENTICATION_CODES
from ._wire import ChildTransport, SessionUpdate

ErrorKind = Literal["auth-required", "rpc-error", "connection-lost", "other"]
"""`other` covers schema-invalid answers (the SDK's validation errors) and anything else."""

MCPServer = McpServerStdio | HttpMcpServer | SseMcpServer

PromptAnswer = tuple[str, Usage | None]
"""The (schema-valid) ACP stop reason of `session/prompt` and the turn's usage, if reported."""


def _ignore(update: SessionUpdate) -> None:
    """Updates before a child is bound (a warm child's `initialize`) have no reader."""


def client_capabilities(*, read: bool, write: bool, terminal: bool) -> ClientCapabilities:
    """What `initialize` advertises: exactly the services the client will answer."""
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=read, write_text_file=write), terminal=terminal
    )


class Session:
    """One SDK client connection to one child.

    The client and the update callback start unbound, so a connection can be opened (and
    `initialize` sent) before the request that will use it exists (a warm child's).
    """

    def __init__(self, pipes: ChildPipes) -> None:
        self.client = ACPClient()
        self.transport = ChildTransport(
            pipes.lines(),
            pipes.stdin,
            on_update=_ignore,
            write_timeout_seconds=pipes.write_timeout_seconds,
        )
        self._conn = ClientSideConnection(cast("Client", self.client), self.transport)

    async def initialize(self, capabilities: ClientCapabilities) -> InitializeResponse:
        return await self._conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities
        )

    async def new_session(self, cwd: str, mcp_servers: list[MCPServer]) -> NewSessionResponse:
        """The schema-valid answer; the caller checks its session id."""
        return await self._conn.new_session(cwd=cwd, mcp_servers=list(mcp_servers))

    async def load_session(
        self, session_id: str, cwd: str, mcp_servers: list[MCPServer]
    ) -> LoadSessionResponse:
        """`session/load`: the agent replays the conversation as updates, then answers."""
        return await self._conn.load_session(
            cwd=cwd, session_id=session_id, mcp_servers=list(mcp_servers)
        )

    async def resume_session(
        self, session_id: str, cwd: str, mcp_servers: list[MCPServer]
    ) -> ResumeSessionResponse:
        """`session/resume`: the agent reopens the conversation without replaying it."""
        return await self._conn.resume_session(
            session_id=session_id, cwd=cwd, mcp_servers=list(mcp_servers)
        )

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        await self._conn.set_session_mode(session_id=session_id, mode_id=mode_id)

    async def set_config_option(self, session_id: str, config_id: str, value: str) -> None:
        await self._conn.set_config_option(config_id=config_id, session_id=session_id, value=value)

    async def prompt(
        self, session_id: str, text: str, *, traceparent: str | None = None
    ) -> PromptAnswer:
        """Returns the (schema-valid) ACP stop reason and the turn's usage, if reported.

        `traceparent` goes in the request's `_meta.traceparent` (the key ACP reserves for W3C
        trace context), so an agent that reads it joins its work for the prompt to ours.
        """
        meta = {} if traceparent is None else {"traceparent": traceparent}
        response = await self._conn.prompt(
            session_id=session_id, prompt=[TextContentBlock(type="text", text=text)], **meta
        )
        return str(response.stop_reason), response.usage

    async def cancel(self, session_id: str) -> None:
        await self._conn.cancel(session_id=session_id)

    async def close(self) -> None:
        await self._conn.close()


def classify_error(error: BaseException) -> ErrorKind:
    """Sorts an exception from a request into the kinds the provider's rules distinguish."""
    if isinstance(error, RequestError):
        return "auth-required" if error.code in AUTHENTICATION_CODES else "rpc-error"
    if isinstance(error, ConnectionError | EOFError):
        return "connection-lost"
    return "other"
