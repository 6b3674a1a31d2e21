"""The SDK runtime's wire vocabulary: method names, params, results and notifications.

Every structure has a builder (what a writer puts on the wire, keys in the runtime's order)
and a parser that validates at the boundary. Client-side parsers raise `SDKProtocolError`;
server-side request parsers raise `InvalidParamsError`, whose message is the runtime's own
error text for the `-32603` answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, cast, get_args

from ._errors import SDKProtocolError
from ._json import JSONObject, JSONValue, as_object

INITIALIZE: Final = "initialize"
SESSION_PROMPT: Final = "session/prompt"
SHUTDOWN: Final = "shutdown"
SESSION_EVENT: Final = "session.event"
SESSION_STATUS: Final = "session.status"
SUBAGENT_STARTED: Final = "subagent.started"
SUBAGENT_FINISHED: Final = "subagent.finished"

SERVER_NAME: Final = "deepseek-harness-sdk-runtime"
"""`serverInfo.name` of an `initialize` result."""

INTERNAL_ERROR: Final = -32603
"""The runtime's code for a handler failure and for an unknown method."""
METHOD_NOT_FOUND: Final = -32601
"""Transport-level only: no handler exists at all."""

SHUTTING_DOWN_MESSAGE: Final = "SDK server is shutting down"
MAX_TOKENS_MESSAGE: Final = "initialize maxTokens must be a positive safe integer"
_MAX_SAFE_INTEGER: Final = 2**53 - 1

EVENT_INBOX_SPLICED: Final = "agent/inbox/spliced"
EVENT_TURN_START: Final = "turn/start"
EVENT_ASSISTANT_CHUNK: Final = "assistant/chunk"
EVENT_ASSISTANT_MESSAGE: Final = "assistant/message"
EVENT_TOOL_CALL: Final = "tool/call"
EVENT_TOOL_RESULT: Final = "tool/result"
EVENT_TURN_END: Final = "turn/end"

SessionStatusValue = Literal["running", "idle"]
TurnEndKind = Literal["completed", "max-tokens", "aborted", "blocked", "error", "interrupted"]
"""The closed set of `turn/end` reason kinds."""
AbortCause = Literal["user", "parent", "hook", "disposed", "legacy"]
"""The closed set of causes of an `aborted` turn."""

TURN_END_KINDS: Final[tuple[TurnEndKind, ...]] = get_args(TurnEndKind)
ABORT_CAUSES: Final[tuple[AbortCause, ...]] = get_args(AbortCause)


class InvalidParamsError(ValueError):
    """Request params a runtime must refuse; `str(e)` is its error message for the answer."""


def unknown_method_message(method: str) -> str:
    """The runtime's text for a method it does not serve (answered with `-32603`)."""
    return f"unknown DeepSeek Harness SDK runtime method: {method}"


def _protocol(what: str) -> SDKProtocolError:
    return SDKProtocolError(f"malformed SDK {what}")


def _strings(value: JSONObject, keys: tuple[str, ...], what: str) -> list[str]:
    """The values of `keys`, each required to be a string.

    Raises:
        SDKProtocolError: a key is missing or not a string (`malformed SDK <what>`).
    """
    found = [value.get(key) for key in keys]
    strings = [item for item in found if isinstance(item, str)]
    if len(strings) != len(keys):
        raise _protocol(what)
    return strings


def _is_int(value: JSONValue) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# ---- initialize ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class InitializeParams:
    """`initialize {cwd, provider, model, maxTokens?}`."""

    cwd: str
    provider: str
    model: str
    max_tokens: int | None = None

    def to_params(self) -> JSONObject:
        """Keys in wire order; `maxTokens` only when set."""
        params: JSONObject = {"cwd": self.cwd, "provider": self.provider, "model": self.model}
        if self.max_tokens is not None:
            params["maxTokens"] = self.max_tokens
        return params

    @classmethod
    def from_params(cls, params: JSONObject) -> InitializeParams:
        """Server side: validates a request's params.

        Raises:
            InvalidParamsError: a field is missing or has the wrong type.
        """
        fields: dict[str, str] = {}
        for key in ("cwd", "provider", "model"):
            value = params.get(key)
            if not isinstance(value, str):
                raise InvalidParamsError(f"initialize {key} must be a string")
            fields[key] = value
        max_tokens = params.get("maxTokens")
        if max_tokens is not None and not (
            _is_int(max_tokens) and 0 < max_tokens <= _MAX_SAFE_INTEGER  # type: ignore[operator]
        ):
            raise InvalidParamsError(MAX_TOKENS_MESSAGE)
        return cls(max_tokens=max_tokens, **fields)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, kw_only=True)
class InitializeResult:
    """`{"serverInfo": {"name", "version"}}`; no version negotiation."""

    name: str = SERVER_NAME
    version: str

    def to_result(self) -> JSONObject:
        return {"serverInfo": {"name": self.name, "version": self.version}}

    @classmethod
    def parse(cls, value: JSONValue) -> InitializeResult:
        """Client side: both serverInfo fields must be strings.

        Raises:
            SDKProtocolError: no serverInfo object or a non-string field.
        """
        info = as_object((as_object(value) or {}).get("serverInfo")) or {}
        name, version = _strings(info, ("name", "version"), "initialize result")
        return cls(name=name, version=version)


# ---- session/prompt -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptParams:
    """`session/prompt {sessionId, contentBlocks:[{type:"text", text}]}`."""

    session_id: str
    text: str

    def to_params(self) -> JSONObject:
        return {
            "sessionId": self.session_id,
            "contentBlocks": [{"type": "text", "text": self.text}],
        }

    @classmethod
    def from_params(cls, params: JSONObject) -> PromptParams:
        """Server side: the session id and the concatenated text blocks.

        Raises:
            InvalidParamsError: no string session id, or content that is not a block list.
        """
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise InvalidParamsError("session/prompt sessionId must be a string")
        return cls(
            session_id=session_id, text=_blocks_text(params.get("contentBlocks"), server=True)
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptResult:
    """`{"messageId": <uuid>}`: an enqueue receipt only."""

    message_id: str

    def to_result(self) -> JSONObject:
        return {"messageId": self.message_id}

    @classmethod
    def parse(cls, value: JSONValue) -> PromptResult:
        """Raises: SDKProtocolError: no string messageId."""
        (message_id,) = _strings(as_object(value) or {}, ("messageId",), "session/prompt result")
        return cls(message_id=message_id)


def _blocks_text(value: JSONValue, *, server: bool = False) -> str:
    """Concatenated `text` of a list of typed content blocks (other block types add nothing).

    Raises `InvalidParamsError` with the runtime's message on the server side, else
    `SDKProtocolError`.
    """

    def malformed(server_message: str) -> Exception:
        return InvalidParamsError(server_message) if server else _protocol("message content")

    if not isinstance(value, list):
        raise malformed("contentBlocks must be a list of content blocks")
    parts: list[str] = []
    for item in value:
        block = as_object(item)
        if block is None or not isinstance(block.get("type"), str):
            raise malformed("contentBlocks must be a list of content blocks")
        if block["type"] == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise malformed("a text content block needs a string text")
            parts.append(text)
    return "".join(parts)


# ---- turn/end -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEnd:
    """A `turn/end` reason read totally: `kind` is `None` when unknown or malformed.

    `reason` is the raw value for host logs only; nothing classifies on it.
    """

    kind: TurnEndKind | None
    abort_cause: AbortCause | None = None
    reason: JSONValue = None

    @classmethod
    def parse(cls, reason: JSONValue) -> TurnEnd:
        """Never raises: anything outside the closed set reads as `kind=None`."""
        body = as_object(reason)
        kind = None if body is None else body.get("kind")
        if not isinstance(kind, str) or kind not in TURN_END_KINDS:
            return cls(kind=None, reason=reason)
        cause: AbortCause | None = None
        if kind == "aborted":
            raw_cause = (as_object((body or {}).get("reason")) or {}).get("kind")
            if isinstance(raw_cause, str) and raw_cause in ABORT_CAUSES:
                cause = raw_cause  # type: ignore[assignment]
        return cls(kind=kind, abort_cause=cause, reason=reason)  # type: ignore[arg-type]


def turn_end_reason(
    kind: TurnEndKind,
    *,
    abort_cause: AbortCause = "user",
    error_message: str = "turn failed",
    error_code: str = "internal",
) -> JSONObject:
    """Server side: a closed-set reason (`aborted` carries its cause, `error` its error)."""
    if kind == "aborted":
        return {"kind": "aborted", "reason": {"kind": abort_cause}}
    if kind == "error":
        return {"kind": "error", "error": {"message": error_message, "code": error_code}}
    return {"kind": kind}


# ---- notifications ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEvent:
    """`session.event {sessionId, event: {type, seq, time, data}}`; unknown types pass through."""

    session_id: str
    type: str
    seq: int | float
    time: JSONValue = None
    data: JSONObject

    def to_params(self) -> JSONObject:
        return {
            "sessionId": self.session_id,
            "event": {"type": self.type, "seq": self.seq, "time": self.time, "data": self.data},
        }

    @classmethod
    def parse(cls, params: JSONObject) -> SessionEvent:
        """Raises: SDKProtocolError: no session id, or an event without its envelope."""
        (session_id,) = _strings(params, ("sessionId",), "session event")
        event = as_object(params.get("event"))
        if event is None:
            raise _protocol("session event")
        kind, seq, data = event.get("type"), event.get("seq"), event.get("data", {})
        data_object = as_object(data)
        if (
            not isinstance(kind, str)
            or not isinstance(seq, int | float)
            or isinstance(seq, bool)
            or data_object is None
        ):
            raise _protocol("session event")
        return cls(
            session_id=session_id, type=kind, seq=seq, time=event.get("time"), data=data_object
        )

    def inserted_ids(self) -> list[str]:
        """`agent/inbox/spliced`: ids of the user messages spliced in.

        Raises: SDKProtocolError: `data.inserted` is not a list.
        """
        inserted = self.data.get("inserted")
        if not isinstance(inserted, list):
            raise _protocol("inbox event")
        ids: list[str] = []
        for item in inserted:
            message_id = (as_object(item) or {}).get("id")
            if isinstance(message_id, str):
                ids.append(message_id)
        return ids

    def chunk_text(self) -> str | None:
        """`assistant/chunk`: the text of a `text-delta` chunk, else `None`.

        Raises: SDKProtocolError: no chunk object, or a text delta without string text.
        """
        kind, text = self.chunk()
        return text if kind == "text-delta" else None

    def chunk(self) -> tuple[str, str | None]:
        """`assistant/chunk`: the chunk's type (`text-delta`, `reasoning-delta`, …) and its
        text when it is a string.

        Raises: SDKProtocolError: no chunk object, or a text delta without string text.
        """
        chunk = as_object(self.data.get("chunk"))
        if chunk is None or not isinstance(chunk.get("type"), str):
            raise _protocol("assistant chunk")
        kind, text = cast(str, chunk["type"]), chunk.get("text")
        if kind == "text-delta" and not isinstance(text, str):
            raise _protocol("assistant chunk")
        return kind, text if isinstance(text, str) else None

    def message_text(self) -> str:
        """`assistant/message`: the concatenated text blocks (may be empty).

        Raises: SDKProtocolError: content that is not a list of typed blocks.
        """
        message = as_object(self.data.get("message"))
        if message is None:
            raise _protocol("assistant message")
        return _blocks_text(message.get("content"))

    def turn_end(self) -> TurnEnd:
        """`turn/end`: the reason, read totally."""
        return TurnEnd.parse(self.data.get("reason"))


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStatus:
    """`session.status {sessionId, status}`."""

    session_id: str
    status: SessionStatusValue

    def to_params(self) -> JSONObject:
        return {"sessionId": self.session_id, "status": self.status}

    @classmethod
    def parse(cls, params: JSONObject) -> SessionStatus:
        """Raises: SDKProtocolError: no session id or a status outside the closed set."""
        (session_id,) = _strings(params, ("sessionId",), "session status")
        status = params.get("status")
        if status not in ("running", "idle"):
            raise _protocol("session status")
        return cls(session_id=session_id, status=status)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentStarted:
    """`subagent.started {parentSessionId, childSessionId}`: an in-process child session."""

    parent_session_id: str
    child_session_id: str

    def to_params(self) -> JSONObject:
        return {"parentSessionId": self.parent_session_id, "childSessionId": self.child_session_id}

    @classmethod
    def parse(cls, params: JSONObject) -> SubagentStarted:
        """Raises: SDKProtocolError: a session id is missing."""
        parent, child = _strings(params, ("parentSessionId", "childSessionId"), "subagent.started")
        return cls(parent_session_id=parent, child_session_id=child)


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentFinished:
    """`subagent.finished {provider, agentId, parentSessionId, childSessionId, status, …}`."""

    provider: str
    agent_id: str
    parent_session_id: str
    child_session_id: str
    status: Literal["ok", "error"]
    stop_reason: JSONValue = None
    last_assistant_message: str | None = None

    def to_params(self) -> JSONObject:
        params: JSONObject = {
            "provider": self.provider,
            "agentId": self.agent_id,
            "parentSessionId": self.parent_session_id,
            "childSessionId": self.child_session_id,
            "status": self.status,
            "stopReason": self.stop_reason,
        }
        if self.last_assistant_message is not None:
            params["lastAssistantMessage"] = self.last_assistant_message
        return params

    @classmethod
    def parse(cls, params: JSONObject) -> SubagentFinished:
        """Raises: SDKProtocolError: a required field is missing or mistyped."""
        provider, agent_id, parent, child = _strings(
            params,
            ("provider", "agentId", "parentSessionId", "childSessionId"),
            "subagent.finished",
        )
        status, last = params.get("status"), params.get("lastAssistantMessage")
        if status not in ("ok", "error") or not (last is None or isinstance(last, str)):
            raise _protocol("subagent.finished")
        return cls(
            provider=provider,
            agent_id=agent_id,
            parent_session_id=parent,
            child_session_id=child,
            status=status,  # type: ignore[arg-type]
            stop_reason=params.get("stopReason"),
            last_assistant_message=last,
        )
