"""Errors of the SDK client, one root for everything the protocol layer raises.

    SDKError
     ├── JSONRPCError(code, message, data)   the runtime answered a request with an error
     ├── SDKProtocolError                    a result, event or message failed its schema
     ├── TransportClosedError                the runtime is not running, exited or closed
     └── RequestTimeoutError                 a per-request timeout elapsed

The provider classifies by class only. Messages may hold runtime-controlled text (an error
message, the stderr tail) and are for host logs, never for a diagnostic.
"""

from __future__ import annotations

from ._json import JSONValue


class SDKError(Exception):
    """Root of every error the SDK client raises."""


class JSONRPCError(SDKError):
    """The runtime answered a request with a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: JSONValue = None) -> None:
        super().__init__(f"JSON-RPC error {code}: {message}")
        self.code = code
        """The error code as sent (`-32603` for handler failures and unknown methods)."""
        self.message = message
        """The runtime's own text: host logs only."""
        self.data = data
        """The optional `data` member, unchanged (`None` when absent)."""


class SDKProtocolError(SDKError):
    """A frame parsed as JSON but its content broke the wire schema."""


class TransportClosedError(SDKError):
    """The runtime is not running, exited, or its output ended or broke.

    The message may carry the exit code and the newest stderr lines, for host logs only.
    """


class RequestTimeoutError(SDKError):
    """A request's own timeout elapsed before its response arrived."""
