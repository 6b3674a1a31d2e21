"""The stream-json control protocol on the CLI's stdio, hand-rolled on core's framing.

One JSON object per line each way. Lines come from the shared bounded `LineReader`; a line that
is not a JSON object with a string `type` ends the connection (`protocol`), a line over the
limit too (`transport`), since a CLI that writes either is not one this provider can read.
Every write is bounded by `write_timeout_seconds`, so a child that stops reading cannot park
the parent. The frames this side writes are built here and nowhere else; nothing the child
wrote is ever logged except by size.

Frames, as the Agent SDKs speak them (`type` first):
- ours: `control_request{request_id, request: {subtype: initialize|interrupt}}`, `user`
  (the prompt), `control_response{response: {subtype: success|error, request_id, …}}`
  answering the CLI's `can_use_tool` (`{behavior: allow, updatedInput}` or
  `{behavior: deny, message, interrupt: false}`);
- theirs: `control_response`, `control_request` (`can_use_tool`, others answered with a fixed
  error), `control_cancel_request`, `system`, `stream_event`, `assistant`, `user`, `result`.
"""

from __future__ import annotations

import json
import logging
import secrets
from typing import Any, Literal

import anyio
from subagent_core.kit import ChildPipes, FrameTooLargeError

_log = logging.getLogger("subagent_claude")

Frame = dict[str, Any]

Closed = Literal[
    "eof", "read-error", "frame-too-large", "undecodable", "write-stalled", "write-failed"
]
"""Why the connection ended."""

DENY_MESSAGE = "The parent's permission policy refused this tool use."
"""The fixed text of every `deny` answer (the model reads it; it says nothing of the host)."""

UNSUPPORTED_MESSAGE = "Unsupported control request."
"""The fixed error answer to a control request this provider does not serve."""


class WireClosedError(Exception):
    """The connection to the child ended; `reason` is a closed value."""

    def __init__(self, reason: Closed) -> None:
        super().__init__(f"the connection to the Claude child ended ({reason})")
        self.reason: Closed = reason


def new_request_id() -> str:
    """`req_` and 16 hex characters, as the SDKs name their requests."""
    return "req_" + secrets.token_hex(8)


class Wire:
    """The child's stdout as frames and its stdin as a bounded writer."""

    def __init__(self, pipes: ChildPipes) -> None:
        self._reader = pipes.lines()
        self._stdin = pipes.stdin
        self._write_timeout = pipes.write_timeout_seconds
        self._lock = anyio.Lock(fast_acquire=True)
        self.closed: Closed | None = None
        """Set once the connection ended, for the first reason seen."""

    def _close(self, reason: Closed) -> WireClosedError:
        if self.closed is None:
            self.closed = reason
        return WireClosedError(reason)

    async def receive(self) -> Frame:
        """The next frame.

        Raises:
            WireClosedError: end of stream, a read error, an over-long or undecodable line.
        """
        while True:
            if self.closed is not None:
                raise WireClosedError(self.closed)
            try:
                line = await self._reader.receive_line()
            except anyio.EndOfStream:
                raise self._close("eof") from None
            except FrameTooLargeError:
                _log.warning("the Claude child sent a line over max_frame_bytes")
                raise self._close("frame-too-large") from None
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as error:
                _log.debug("reading from the Claude child failed", exc_info=error)
                raise self._close("read-error") from None
            if not line.strip():
                continue
            frame = _parse(line)
            if frame is None:
                _log.info("the Claude child sent an undecodable frame (%d bytes)", len(line))
                raise self._close("undecodable")
            return frame

    async def send(self, frame: Frame) -> None:
        """Writes one frame, bounded by the write timeout.

        Raises:
            WireClosedError: the pipe is closed or the write stalled past the bound.
        """
        data = (json.dumps(frame, separators=(",", ":")) + "\n").encode("utf-8")
        async with self._lock:
            if self.closed in ("write-stalled", "write-failed"):
                raise WireClosedError(self.closed)
            try:
                with anyio.move_on_after(self._write_timeout) as scope:
                    await self._stdin.send(data)
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as error:
                _log.debug("writing a frame to the Claude child failed", exc_info=error)
                raise self._close("write-failed") from None
            if scope.cancelled_caught:
                _log.warning("a write to the Claude child stalled past the write bound")
                raise self._close("write-stalled")


def _parse(line: bytes) -> Frame | None:
    try:
        value: object = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    frame: Frame = value  # pyright: ignore[reportUnknownVariableType]
    return frame if isinstance(frame.get("type"), str) else None


def initialize_request(request_id: str) -> Frame:
    """The handshake: no hooks, no SDK MCP servers, no agents."""
    return {
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": "initialize", "hooks": None},
    }


def interrupt_request(request_id: str) -> Frame:
    """Asks the CLI to stop the turn in progress."""
    return {
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": "interrupt"},
    }


def user_message(prompt: str) -> Frame:
    """The one prompt of the run."""
    return {
        "type": "user",
        "message": {"role": "user", "content": prompt},
        "parent_tool_use_id": None,
        "session_id": "default",
    }


def permission_answer(request_id: object, *, allow: bool, tool_input: object) -> Frame:
    """The answer to a `can_use_tool` request; a deny never interrupts the turn."""
    answer: dict[str, Any] = (
        {"behavior": "allow", "updatedInput": tool_input if isinstance(tool_input, dict) else {}}
        if allow
        else {"behavior": "deny", "message": DENY_MESSAGE, "interrupt": False}
    )
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": answer},
    }


def error_answer(request_id: object) -> Frame:
    """The fixed error answer to a control request this provider does not serve."""
    return {
        "type": "control_response",
        "response": {"subtype": "error", "request_id": request_id, "error": UNSUPPORTED_MESSAGE},
    }


def as_object(value: object) -> dict[str, Any]:
    """`value` when it is a JSON object, else `{}`."""
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def as_list(value: object) -> list[Any]:
    """`value` when it is a JSON array, else `[]`."""
    return value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]
