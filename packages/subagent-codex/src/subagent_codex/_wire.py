"""The app-server wire: JSONL JSON-RPC over the child's stdio, on core's bounded line reader.

Codex speaks JSON-RPC 2.0 without the `"jsonrpc"` member, one object per line. Three kinds
of frames arrive: responses to our requests (matched by id; a late, duplicate or unknown id
is dropped), notifications (handed to `on_notification` synchronously, in order) and server
requests (approvals and the like, handed to `on_request`, which must not block: it queues).

The reader is the only task that reads stdout. It ends on EOF, on a line over the limit, on a
line that is not a JSON object, or on a read error, and records which in `broken`; every
request still waiting then fails with `ConnectionLostError`. Writes are serialised and each is
bounded by `write_timeout_seconds`, so a child that stops reading its stdin cannot block a
run forever.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Final, Literal, cast

import anyio
import anyio.abc
from subagent_core.kit import ChildPipes, FrameTooLargeError, LineReader

_log = logging.getLogger("subagent_codex")

Broken = Literal["eof", "frame", "garbage", "read-error", "write-error"]
"""Why the connection ended: the facts the run classifies by."""

JSON = dict[str, object]

METHOD_NOT_FOUND: Final = -32601
"""The JSON-RPC code for a request this client does not serve."""

BUSY_TEXT: Final = "too many pending requests"
"""The fixed message for a server request refused because the queue was full."""


class ConnectionLostError(Exception):
    """The connection ended before the awaited response arrived."""


class RPCError(Exception):
    """The child answered a request with a JSON-RPC error; only the code is kept."""

    def __init__(self, code: int | None) -> None:
        super().__init__("the child answered with a JSON-RPC error")
        self.code = code


class _Slot:
    """One pending request's reply."""

    __slots__ = ("answered", "done", "error", "result")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.answered = False
        self.result: object = None
        self.error: RPCError | None = None


RequestId = int | str


class Connection:
    """One child's JSON-RPC connection; `read()` must run in a task while it is used."""

    def __init__(
        self,
        pipes: ChildPipes,
        *,
        on_notification: Callable[[str, Mapping[str, object]], None],
        on_request: Callable[[RequestId, str, Mapping[str, object]], bool],
        on_frame: Callable[[], None],
    ) -> None:
        self._stdin = pipes.stdin
        self._stdout = _EndMark(pipes.stdout)
        self._lines = LineReader(self._stdout, max_frame_bytes=pipes.max_frame_bytes)
        self._write_timeout = pipes.write_timeout_seconds
        self._on_notification = on_notification
        self._on_request = on_request
        self._on_frame = on_frame
        self._pending: dict[int, _Slot] = {}
        self._next_id = 1
        self._write_lock = anyio.Lock()
        self.broken: Broken | None = None
        """Set once the connection ended; no more frames are delivered after it."""
        self.ended = anyio.Event()
        """Set when `broken` is."""

    # -- reading -------------------------------------------------------------------------

    async def read(self) -> None:
        """Reads and dispatches frames until the connection ends (never raises)."""
        try:
            while True:
                try:
                    line = await self._lines.receive_line()
                except anyio.EndOfStream:
                    self._end("eof")
                    return
                except FrameTooLargeError:
                    self._end("frame")
                    return
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    self._end("read-error")
                    return
                self._on_frame()
                if not line.strip():
                    continue
                frame = _parse(line)
                if frame is None:
                    if self._stdout.ended:
                        # A frame cut off by the child's death, not a line it meant.
                        self._end("eof")
                        return
                    _log.info("codex child wrote a line that is not a JSON-RPC object")
                    self._end("garbage")
                    return
                if not self._dispatch(frame):
                    await self._refuse(frame.get("id"))
        finally:
            self._end("eof")

    async def _refuse(self, ident: object) -> None:
        """Answers a server request the run could not queue (a storm) with an error."""
        try:
            await self.respond_error(cast(RequestId, ident), METHOD_NOT_FOUND, BUSY_TEXT)
        except ConnectionLostError:
            pass

    def _dispatch(self, frame: JSON) -> bool:
        """Delivers one frame; False when a server request was not taken."""
        method = frame.get("method")
        ident = frame.get("id")
        params = frame.get("params")
        params_map: Mapping[str, object] = (
            cast(Mapping[str, object], params) if isinstance(params, dict) else {}
        )
        if isinstance(method, str):
            if _is_id(ident):
                return self._on_request(cast(RequestId, ident), method, params_map)
            self._on_notification(method, params_map)
            return True
        if isinstance(ident, int) and not isinstance(ident, bool):
            slot = self._pending.pop(ident, None)
            if slot is None:
                _log.debug("codex child answered an id that is not pending; dropped")
                return True
            error = frame.get("error")
            if "result" not in frame and isinstance(error, dict):
                code = cast(Mapping[str, object], error).get("code")
                slot.error = RPCError(code if isinstance(code, int) else None)
                slot.answered = True
            else:
                slot.result = frame.get("result")
            slot.answered = True
            slot.done.set()
            return True
        _log.debug("codex child sent a frame that is neither request, notification nor reply")
        return True

    def _end(self, reason: Broken) -> None:
        if self.broken is None:
            self.broken = reason
            self.ended.set()
            for slot in self._pending.values():
                slot.done.set()
            self._pending.clear()

    # -- writing -------------------------------------------------------------------------

    async def request(
        self, method: str, params: Mapping[str, object], *, traceparent: str | None = None
    ) -> object:
        """Sends a request and waits for its result; `traceparent` joins codex's work for it
        to the caller's trace (the request's W3C `trace` field).

        Raises:
            RPCError: the child answered with an error.
            ConnectionLostError: the connection ended first (or the write failed).
        """
        if self.broken is not None:
            raise ConnectionLostError
        ident = self._next_id
        self._next_id += 1
        slot = _Slot()
        self._pending[ident] = slot
        try:
            frame: JSON = {"id": ident, "method": method, "params": dict(params)}
            if traceparent is not None:
                frame["trace"] = {"traceparent": traceparent}
            await self._write(frame)
            await slot.done.wait()
        finally:
            self._pending.pop(ident, None)
        if not slot.answered:
            raise ConnectionLostError
        if slot.error is not None:
            raise slot.error
        return slot.result

    async def notify(self, method: str, params: Mapping[str, object] | None = None) -> None:
        """Sends a notification.

        Raises:
            ConnectionLostError: the write failed.
        """
        frame: JSON = {"method": method}
        if params is not None:
            frame["params"] = dict(params)
        await self._write(frame)

    async def respond(self, ident: RequestId, result: Mapping[str, object]) -> None:
        """Answers a server request.

        Raises:
            ConnectionLostError: the write failed.
        """
        await self._write({"id": ident, "result": dict(result)})

    async def respond_error(self, ident: RequestId, code: int, message: str) -> None:
        """Answers a server request with a JSON-RPC error (`message` is our fixed text).

        Raises:
            ConnectionLostError: the write failed.
        """
        await self._write({"id": ident, "error": {"code": code, "message": message}})

    async def _write(self, frame: JSON) -> None:
        data = (json.dumps(frame, separators=(",", ":")) + "\n").encode()
        async with self._write_lock:
            if self.broken is not None:
                raise ConnectionLostError
            try:
                with anyio.fail_after(self._write_timeout):
                    await self._stdin.send(data)
            except (TimeoutError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self._end("write-error")
                raise ConnectionLostError from None


class _EndMark(anyio.abc.ByteReceiveStream):
    """Passes bytes through and remembers that the stream ended, so a last line without its
    newline (a frame cut off by the child's death) can be told from a garbage line."""

    def __init__(self, stream: anyio.abc.ByteReceiveStream) -> None:
        self._stream = stream
        self.ended = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            return await self._stream.receive(max_bytes)
        except anyio.EndOfStream:
            self.ended = True
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _parse(line: bytes) -> JSON | None:
    try:
        value = cast(object, json.loads(line))
    except (ValueError, RecursionError):
        return None
    return cast(JSON, value) if isinstance(value, dict) else None
