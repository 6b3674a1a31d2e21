"""The SDK wire for either end: framing, method names, typed params/results, notifications.

A runtime (server) built on it reads requests and writes answers and notifications:

    from subagent_sdk import wire

    async with wire.open_stdio_streams() as (stdin, stdout):
        writer = wire.FrameWriter(stdout)
        async for frame in wire.FrameReader(stdin):          # garbage lines are skipped
            if isinstance(frame, wire.Request) and frame.method == wire.INITIALIZE:
                params = wire.InitializeParams.from_params(frame.params)  # InvalidParamsError
                await writer.send_result(frame.id, wire.InitializeResult(version="1").to_result())
            elif isinstance(frame, wire.Request):
                await writer.send_error(
                    frame.id, wire.INTERNAL_ERROR, wire.unknown_method_message(frame.method)
                )
        # notifications: writer.send_notification(wire.SESSION_EVENT, SessionEvent(...).to_params())

Frames are compact JSON lines; requests are written `jsonrpc, id, method, params` in that order.
The line reader, its frame limit and error, and the stdio streams are `subagent_core`'s (one
home for each), re-exported here so a runtime needs only this module.
"""

from subagent_core.kit import DEFAULT_MAX_FRAME_BYTES as DEFAULT_MAX_FRAME_BYTES
from subagent_core.kit import FrameTooLargeError as FrameTooLargeError
from subagent_core.kit import open_stdio_streams as open_stdio_streams

from ._framing import ErrorObject as ErrorObject
from ._framing import Frame as Frame
from ._framing import FrameReader as FrameReader
from ._framing import FrameWriter as FrameWriter
from ._framing import Notification as Notification
from ._framing import Request as Request
from ._framing import RequestId as RequestId
from ._framing import Response as Response
from ._framing import classify as classify
from ._framing import encode_frame as encode_frame
from ._framing import error_frame as error_frame
from ._framing import new_request_id as new_request_id
from ._framing import notification_frame as notification_frame
from ._framing import parse_frame as parse_frame
from ._framing import request_frame as request_frame
from ._framing import result_frame as result_frame
from ._json import JSONObject as JSONObject
from ._json import JSONValue as JSONValue
from ._wire import ABORT_CAUSES as ABORT_CAUSES
from ._wire import EVENT_ASSISTANT_CHUNK as EVENT_ASSISTANT_CHUNK
from ._wire import EVENT_ASSISTANT_MESSAGE as EVENT_ASSISTANT_MESSAGE
from ._wire import EVENT_INBOX_SPLICED as EVENT_INBOX_SPLICED
from ._wire import EVENT_TOOL_CALL as EVENT_TOOL_CALL
from ._wire import EVENT_TOOL_RESULT as EVENT_TOOL_RESULT
from ._wire import EVENT_TURN_END as EVENT_TURN_END
from ._wire import EVENT_TURN_START as EVENT_TURN_START
from ._wire import INITIALIZE as INITIALIZE
from ._wire import INTERNAL_ERROR as INTERNAL_ERROR
from ._wire import MAX_TOKENS_MESSAGE as MAX_TOKENS_MESSAGE
from ._wire import METHOD_NOT_FOUND as METHOD_NOT_FOUND
from ._wire import SERVER_NAME as SERVER_NAME
from ._wire import SESSION_EVENT as SESSION_EVENT
from ._wire import SESSION_PROMPT as SESSION_PROMPT
from ._wire import SESSION_STATUS as SESSION_STATUS
from ._wire import SHUTDOWN as SHUTDOWN
from ._wire import SHUTTING_DOWN_MESSAGE as SHUTTING_DOWN_MESSAGE
from ._wire import SUBAGENT_FINISHED as SUBAGENT_FINISHED
from ._wire import SUBAGENT_STARTED as SUBAGENT_STARTED
from ._wire import TURN_END_KINDS as TURN_END_KINDS
from ._wire import AbortCause as AbortCause
from ._wire import InitializeParams as InitializeParams
from ._wire import InitializeResult as InitializeResult
from ._wire import InvalidParamsError as InvalidParamsError
from ._wire import PromptParams as PromptParams
from ._wire import PromptResult as PromptResult
from ._wire import SessionEvent as SessionEvent
from ._wire import SessionStatus as SessionStatus
from ._wire import SessionStatusValue as SessionStatusValue
from ._wire import SubagentFinished as SubagentFinished
from ._wire import SubagentStarted as SubagentStarted
from ._wire import TurnEnd as TurnEnd
from ._wire import TurnEndKind as TurnEndKind
from ._wire import turn_end_reason as turn_end_reason
from ._wire import unknown_method_message as unknown_method_message

open_stdio = open_stdio_streams
"""The former name of `open_stdio_streams`, kept for runtimes written against it."""

__all__ = [
    "ABORT_CAUSES",
    "DEFAULT_MAX_FRAME_BYTES",
    "EVENT_ASSISTANT_CHUNK",
    "EVENT_ASSISTANT_MESSAGE",
    "EVENT_INBOX_SPLICED",
    "EVENT_TOOL_CALL",
    "EVENT_TOOL_RESULT",
    "EVENT_TURN_END",
    "EVENT_TURN_START",
    "INITIALIZE",
    "INTERNAL_ERROR",
    "MAX_TOKENS_MESSAGE",
    "METHOD_NOT_FOUND",
    "SERVER_NAME",
    "SESSION_EVENT",
    "SESSION_PROMPT",
    "SESSION_STATUS",
    "SHUTDOWN",
    "SHUTTING_DOWN_MESSAGE",
    "SUBAGENT_FINISHED",
    "SUBAGENT_STARTED",
    "TURN_END_KINDS",
    "AbortCause",
    "ErrorObject",
    "Frame",
    "FrameReader",
    "FrameTooLargeError",
    "FrameWriter",
    "InitializeParams",
    "InitializeResult",
    "InvalidParamsError",
    "JSONObject",
    "JSONValue",
    "Notification",
    "PromptParams",
    "PromptResult",
    "Request",
    "RequestId",
    "Response",
    "SessionEvent",
    "SessionStatus",
    "SessionStatusValue",
    "SubagentFinished",
    "SubagentStarted",
    "TurnEnd",
    "TurnEndKind",
    "classify",
    "encode_frame",
    "error_frame",
    "new_request_id",
    "notification_frame",
    "open_stdio",
    "open_stdio_streams",
    "parse_frame",
    "request_frame",
    "result_frame",
    "turn_end_reason",
    "unknown_method_message",
]
