"""The message transport the `acp` SDK connection runs on: the one seam between the child's
pipes and the SDK.

The SDK has no line cap, starts one task per inbound message, logs failed notification handlers
(with the child's method names and payloads) on the root logger, and writes without a bound.
Rather than patch its internals, every frame passes through this transport first:

- lines come from a bounded reader; an over-long line ends the connection (`transport`);
- `session/update` notifications are validated with the SDK's schema and handed to the run in
  arrival order, synchronously (no task per update); those arriving after the answer to the
  latest `session/prompt` (before the next one) are dropped; other notifications are dropped
  (the client takes none);
- a tool kind outside the ACP set, in an update or a permission request, is rewritten to
  `other` before the schema sees it (the schema would drop it to "no kind"), so a kind the child
  named is never confused with none; a tool call status outside the ACP set has no ACP value to
  become, so its update is handed on as `StatusOutsideSet` (the schema reads "no status");
- every line read is reported (`on_frame`: the running turn's idle clock restarts), the one
  place that sees them all;
- child requests: at most `MAX_INBOUND_REQUESTS` reach the SDK at a time; one beyond that is
  answered here with a fixed JSON-RPC error, allocating nothing per request;
- answers: only the first answer to an id the SDK is waiting for reaches it; duplicates and
  strays are dropped and logged by size;
- writes: each is bounded by `write_timeout_seconds`; a stalled write ends the connection
  (`transport`), so a child that never reads cannot park the parent.

Everything the child wrote is logged only on the `subagent_acp` logger, and only by size.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Final, Literal, cast

import anyio
import anyio.abc
from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    SessionInfoUpdate,
    SessionNotification,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)
from subagent_core.kit import ACP_TOOL_KINDS, FrameTooLargeError, LineReader

_log = logging.getLogger("subagent_acp")

MAX_INBOUND_REQUESTS = 8
"""Child→parent requests in flight per run; a real agent rarely has more than a few."""

REFUSAL_CODE = -32603
REFUSAL_MESSAGE = "Too many concurrent requests to the client"
"""Fixed answer to a request beyond `MAX_INBOUND_REQUESTS`."""

Broken = Literal["frame-too-large", "write-stalled"]
"""Why the transport ended the connection itself; both classify as `transport`."""


class ConnectionLostError(ConnectionError):
    """Writing a frame to the child failed or stalled past the write bound."""


SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | AgentPlanContentUpdate
    | AgentPlanRemovedUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
)
"""One validated `SessionNotification.update` (the schema's discriminated union)."""

_TOOL_CALL_UPDATES: Final = frozenset({"tool_call", "tool_call_update"})
_ACP_TOOL_CALL_STATUSES: Final = frozenset({"pending", "in_progress", "completed", "failed"})


class StatusOutsideSet:
    """Marks a tool call update whose child named a status outside the ACP set.

    The schema reads such a status as `None`, the same value as "no status stated"; this
    marker keeps the two apart, so the event can say `unknown` (a JSON `null` or a missing
    status is not marked).
    """

    __slots__ = ()


class ToolCallStartOutsideSet(StatusOutsideSet, ToolCallStart):
    """A `tool_call` whose status the child named outside the ACP set."""


class ToolCallProgressOutsideSet(StatusOutsideSet, ToolCallProgress):
    """A `tool_call_update` whose status the child named outside the ACP set."""


class ChildTransport:
    """`acp`'s message-level `Transport` over a managed child's stdin and stdout."""

    def __init__(
        self,
        reader: LineReader,
        stdin: anyio.abc.ByteSendStream,
        *,
        on_update: Callable[[SessionUpdate], None],
        write_timeout_seconds: float,
    ) -> None:
        self._reader = reader
        self._stdin = stdin
        self.on_update = on_update
        """Receives each `session/update` in arrival order (set when a run binds the connection)."""
        self._write_timeout = write_timeout_seconds
        self._send_lock = anyio.Lock(fast_acquire=True)
        self._receive_scope: anyio.CancelScope | None = None
        self._awaiting: set[object] = set()
        self._prompt_id: object = None
        self._prompt_answered = False
        self._inbound = 0
        self.broken: Broken | None = None
        """Set when the transport ended the connection itself."""
        self.on_frame: Callable[[], None] | None = None
        """Called on every line the child writes (set when a child binds the connection)."""

    @property
    def prompt_answered(self) -> bool:
        """True once the first answer to the latest `session/prompt` arrived."""
        return self._prompt_answered

    # -- acp.Transport ---------------------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            # An answer to one of the child's requests: a failure here is the connection's,
            # not the handler's, so the SDK never sees (or logs) it.
            self._inbound = max(0, self._inbound - 1)
            try:
                await self._write(_encode(message))
            except ConnectionLostError:
                _log.debug("an answer to the ACP child was not delivered")
            return
        request_id = message.get("id")
        if request_id is not None:
            self._awaiting.add(request_id)
            if method == "session/prompt":
                self._prompt_id = request_id
                self._prompt_answered = False
        try:
            await self._write(_encode(message))
        except BaseException:
            self._awaiting.discard(request_id)
            raise

    async def receive(self) -> dict[str, Any] | None:
        while self.broken is None:
            line = b""
            with anyio.CancelScope() as scope:
                self._receive_scope = scope
                try:
                    line = await self._reader.receive_line()
                except anyio.EndOfStream:
                    return None
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as error:
                    _log.debug("reading from the ACP child failed", exc_info=error)
                    return None
                except FrameTooLargeError:
                    _log.warning("the ACP child sent a line over max_frame_bytes; closing")
                    self.broken = "frame-too-large"
                    return None
                finally:
                    self._receive_scope = None
            if scope.cancelled_caught:
                return None
            if self.on_frame is not None:
                self.on_frame()
            message = _parse(line)
            if message is not None:
                routed = await self._route(message, len(line))
                if routed is not None:
                    return routed
        return None

    async def close(self) -> None:
        """Nothing to release: the managed process owns and closes the pipes."""

    # -- routing -----------------------------------------------------------------------------

    async def _route(self, message: dict[str, Any], size: int) -> dict[str, Any] | None:
        method = message.get("method")
        if method is None:
            request_id = message.get("id")
            if request_id not in self._awaiting:
                _log.debug("dropped an unexpected or repeated answer (%d bytes)", size)
                return None
            self._awaiting.discard(request_id)
            if request_id == self._prompt_id:
                self._prompt_answered = True
            return message
        if "id" in message:
            if self._inbound >= MAX_INBOUND_REQUESTS:
                await self._refuse(message["id"])
                return None
            self._inbound += 1
            if method == "session/request_permission":
                _close_tool_kind(message.get("params"), "toolCall")
            return message
        if method != "session/update":
            _log.debug("dropped a notification the client does not take (%d bytes)", size)
        elif self._prompt_answered:
            _log.debug("dropped a session/update after the prompt's answer (%d bytes)", size)
        else:
            self._deliver_update(message.get("params"), size)
        return None

    def _deliver_update(self, params: object, size: int) -> None:
        _close_tool_kind(params, "update")
        outside = _status_outside_set(params)
        try:
            notification = SessionNotification.model_validate(params)
        except ValueError:  # the schema's validation error
            _log.debug("dropped a schema-invalid session/update (%d bytes)", size)
            return
        update = notification.update
        if outside:
            update = _mark_status_outside_set(update)
        self.on_update(update)

    async def _refuse(self, request_id: object) -> None:
        error = {"code": REFUSAL_CODE, "message": REFUSAL_MESSAGE}
        try:
            await self._write(_encode({"jsonrpc": "2.0", "id": request_id, "error": error}))
        except ConnectionLostError:
            _log.debug("a refusal to the ACP child was not delivered")

    # -- writing -----------------------------------------------------------------------------

    async def _write(self, data: bytes) -> None:
        if self.broken is not None:
            raise ConnectionLostError("the connection to the child is closed")
        async with self._send_lock:
            if self.broken is not None:
                raise ConnectionLostError("the connection to the child is closed")
            try:
                with anyio.move_on_after(self._write_timeout) as scope:
                    await self._stdin.send(data)
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as error:
                _log.debug("writing a frame to the ACP child failed", exc_info=error)
                raise ConnectionLostError("the pipe to the child is closed") from error
            if scope.cancelled_caught:
                _log.warning("a write to the ACP child stalled past the write bound; closing")
                self._break("write-stalled")
                raise ConnectionLostError("the child stopped reading its input")

    def _break(self, reason: Broken) -> None:
        if self.broken is None:
            self.broken = reason
        if self._receive_scope is not None:
            self._receive_scope.cancel()


def _close_tool_kind(params: object, key: str) -> None:
    """Rewrites `params[key].kind` to `other` when the child named a kind outside the ACP set.

    The schema turns an unknown kind into `None`, the same value as "no kind stated"; a JSON
    `null` or a missing kind stays as it is.
    """
    if not isinstance(params, dict):
        return
    holder = cast("dict[str, object]", params).get(key)
    if isinstance(holder, dict):
        fields = cast("dict[str, object]", holder)
        kind = fields.get("kind")
        if kind is not None and (not isinstance(kind, str) or kind not in ACP_TOOL_KINDS):
            fields["kind"] = "other"


def _status_outside_set(params: object) -> bool:
    """True when `params.update` is a tool call update naming a status outside the ACP set.

    Any string outside the set, or a non-string; a JSON `null` or a missing status is not.
    """
    if not isinstance(params, dict):
        return False
    update = cast("dict[str, object]", params).get("update")
    if not isinstance(update, dict):
        return False
    fields = cast("dict[str, object]", update)
    if fields.get("sessionUpdate") not in _TOOL_CALL_UPDATES:
        return False
    status = fields.get("status")
    return status is not None and (
        not isinstance(status, str) or status not in _ACP_TOOL_CALL_STATUSES
    )


def _mark_status_outside_set(update: SessionUpdate) -> SessionUpdate:
    """The same update, as the `StatusOutsideSet` class of its kind (fields as validated)."""
    if isinstance(update, ToolCallStart):
        return ToolCallStartOutsideSet.model_construct(update.model_fields_set, **dict(update))
    if isinstance(update, ToolCallProgress):
        return ToolCallProgressOutsideSet.model_construct(update.model_fields_set, **dict(update))
    return update


def _encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")


def _parse(line: bytes) -> dict[str, Any] | None:
    """One JSON-RPC object, or `None` for anything unusable (logged by size only)."""
    if not line or line.isspace():
        return None
    try:
        value: object = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        _log.debug("skipped a malformed frame from the ACP child (%d bytes)", len(line))
        return None
    if not isinstance(value, dict):
        _log.debug("skipped a non-object frame from the ACP child (%d bytes)", len(line))
        return None
    message: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    if isinstance(message.get("id"), list | dict) or (
        "method" in message and not isinstance(message["method"], str)
    ):
        _log.debug("skipped a frame with an unusable id or method (%d bytes)", len(line))
        return None
    return message
