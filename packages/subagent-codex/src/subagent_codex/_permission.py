"""Server requests: approvals through the running turn's `PermissionGate`, the rest refused.

Codex asks before a command leaves the sandbox (`item/commandExecution/requestApproval`,
kind `execute`), before a patch it may not write (`item/fileChange/requestApproval`, `edit`)
and for extra sandbox permissions (`item/permissions/requestApproval`, `other`); the legacy
v1 shapes (`execCommandApproval`, `applyPatchApproval`) are answered the same way. An allowed
request is accepted once, never for the session (`acceptForSession` would grant the next one
unasked). Elicitations are declined, user-input requests get no answers, and any other request
is answered with a JSON-RPC error so the turn goes on without it.

Requests are answered one at a time by one worker in arrival order: a host callback may take
as long as it likes, and a storm of requests queues (bounded) instead of spawning tasks. The
worker lives as long as the child; each request is decided by the gate of the turn running
when it is answered, and one that arrives between turns is declined unrecorded (no turn asked
for the work it would allow).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from subagent_core import OptionKind
from subagent_core.kit import ALLOW_KINDS, PermissionGate

from ._wire import METHOD_NOT_FOUND, Connection, ConnectionLostError, RequestId

_log = logging.getLogger("subagent_codex")

QUEUE_CAPACITY: Final = 64
"""Server requests waiting for the worker; past it the reader refuses them at once."""

_OFFERED: Final[tuple[OptionKind, ...]] = ("allow_once", "reject_once")
_KINDS: Final = {
    "item/commandExecution/requestApproval": "execute",
    "execCommandApproval": "execute",
    "item/fileChange/requestApproval": "edit",
    "applyPatchApproval": "edit",
    "item/permissions/requestApproval": "other",
}
_LEGACY: Final = frozenset({"execCommandApproval", "applyPatchApproval"})
REFUSED_TEXT: Final = "not supported by this client"
"""The fixed message of every JSON-RPC error this client sends."""


@dataclass(frozen=True, slots=True)
class ServerRequest:
    """One request from the child, as queued for the worker."""

    ident: RequestId
    method: str
    params: Mapping[str, object]


def _title(params: Mapping[str, object]) -> str | None:
    """Untrusted text for a human (the command, or codex's reason); never for a diagnostic."""
    for key in ("command", "reason"):
        value = params.get(key)
        if isinstance(value, str):
            return value
    return None


def _answer(method: str, params: Mapping[str, object], allowed: bool) -> dict[str, object]:
    if method in _LEGACY:
        return {"decision": "approved" if allowed else "denied"}
    if method == "item/permissions/requestApproval":
        granted = params.get("permissions") if allowed else None
        return {"permissions": granted if isinstance(granted, dict) else {}, "scope": "turn"}
    return {"decision": "accept" if allowed else "decline"}


def queue_request(
    queue: MemoryObjectSendStream[ServerRequest],
    ident: RequestId,
    method: str,
    params: Mapping[str, object],
) -> bool:
    """The reader's hand-off: queues a server request for the worker without waiting; False
    when the queue is full or closed (the reader then refuses the request at once)."""
    try:
        queue.send_nowait(ServerRequest(ident, method, params))
    except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
        return False
    return True


GateOf = Callable[[], PermissionGate | None]
"""The gate of the turn running now, if any."""


async def answer(
    connection: Connection, gate: PermissionGate | None, request: ServerRequest
) -> None:
    """Decides and answers one server request (declined when no turn is running).

    Raises:
        ConnectionLostError: the answer could not be written.
    """
    method, params = request.method, request.params
    kind = _KINDS.get(method)
    if kind is not None:
        choice = None
        if gate is not None:
            choice = await gate.decide(kind, _OFFERED, title=_title(params), raw_input=dict(params))
        await connection.respond(request.ident, _answer(method, params, choice in ALLOW_KINDS))
    elif method == "mcpServer/elicitation/request":
        await connection.respond(request.ident, {"action": "decline"})
    elif method == "item/tool/requestUserInput":
        await connection.respond(request.ident, {"answers": {}})
    else:
        _log.info("codex child sent a server request this client does not serve")
        await connection.respond_error(request.ident, METHOD_NOT_FOUND, REFUSED_TEXT)


async def serve_requests(
    connection: Connection,
    gate_of: GateOf,
    requests: MemoryObjectReceiveStream[ServerRequest],
) -> None:
    """The worker: answers queued requests in order until the queue closes or the wire ends."""
    async with requests:
        async for request in requests:
            try:
                await answer(connection, gate_of(), request)
            except ConnectionLostError:
                return
            await anyio.lowlevel.checkpoint()
