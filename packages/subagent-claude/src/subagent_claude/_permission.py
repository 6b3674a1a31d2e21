"""The CLI's `can_use_tool` requests, answered through the turn's `PermissionGate`.

Claude Code asks once per tool use; an answer is `allow` or `deny` and nothing is remembered
between requests, so the options offered to the gate are `allow_once` and `reject_once`. A fixed
policy (or a per-kind mapping) decides at once, in the reading task. A host callback may take
its time, so it runs in a task of the turn, at most `MAX_PENDING_CALLBACKS` at a time: a request
beyond that is denied without asking (and without a record), so a child that floods
requests cannot grow the parent's memory. A `control_cancel_request` for a pending request
cancels its callback; the CLI has already given up on the answer.

Any other control request is answered with one fixed error and otherwise ignored.
"""

from __future__ import annotations

import logging
from typing import Final

import anyio
import anyio.abc
from subagent_core import OptionKind
from subagent_core.kit import PermissionGate

from ._facts import tool_kind_of
from ._wire import Frame, Wire, WireClosedError, as_object, error_answer, permission_answer

_log = logging.getLogger("subagent_claude")

MAX_PENDING_CALLBACKS: Final = 8
"""Host callbacks awaited at once per turn; a real CLI asks one at a time."""

OFFERED: Final[tuple[OptionKind, ...]] = ("allow_once", "reject_once")
"""What a Claude permission request can be answered with."""

_ALLOW: Final = frozenset({"allow_once", "allow_always"})


class PermissionDesk:
    """One turn's answers to the CLI's control requests."""

    def __init__(
        self, gate: PermissionGate, wire: Wire, tg: anyio.abc.TaskGroup, *, asks_host: bool
    ) -> None:
        self._gate = gate
        self._asks_host = asks_host
        self._wire = wire
        self._tg = tg
        self._pending: dict[str, anyio.CancelScope] = {}

    @staticmethod
    async def refuse(wire: Wire, frame: Frame) -> None:
        """Answers a control request this provider does not serve (fixed error)."""
        request_id = frame.get("request_id")
        if isinstance(request_id, str):
            await _send(wire, error_answer(request_id))

    async def handle(self, frame: Frame) -> None:
        """Serves one control request from the CLI."""
        request = as_object(frame.get("request"))
        request_id = frame.get("request_id")
        if request.get("subtype") != "can_use_tool" or not isinstance(request_id, str):
            _log.info("the Claude child sent a control request this provider does not serve")
            await self.refuse(self._wire, frame)
            return
        if self._asks_host and (
            len(self._pending) >= MAX_PENDING_CALLBACKS or request_id in self._pending
        ):
            _log.warning("too many permission requests in flight; denying without asking")
            await _send(self._wire, permission_answer(request_id, allow=False, tool_input=None))
            return
        if not self._asks_host:
            await self._decide(request_id, request)
            return
        scope = anyio.CancelScope()
        self._pending[request_id] = scope
        self._tg.start_soon(self._decide_in, scope, request_id, request)

    def cancel(self, request_id: object) -> None:
        """The CLI withdrew a request: its pending callback is cancelled."""
        if isinstance(request_id, str):
            scope = self._pending.get(request_id)
            if scope is not None:
                scope.cancel()

    async def _decide_in(
        self, scope: anyio.CancelScope, request_id: str, request: dict[str, object]
    ) -> None:
        try:
            with scope:
                await self._decide(request_id, request)
        finally:
            self._pending.pop(request_id, None)

    async def _decide(self, request_id: str, request: dict[str, object]) -> None:
        tool_input = request.get("input")
        title = request.get("description") or request.get("display_name")
        choice = await self._gate.decide(
            tool_kind_of(request.get("tool_name")),
            OFFERED,
            title=title if isinstance(title, str) else None,
            raw_input=tool_input,
        )
        allow = choice in _ALLOW
        await _send(self._wire, permission_answer(request_id, allow=allow, tool_input=tool_input))


async def _send(wire: Wire, frame: Frame) -> None:
    try:
        await wire.send(frame)
    except WireClosedError:
        _log.debug("an answer to the Claude child was not delivered")
