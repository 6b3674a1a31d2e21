"""The typed stdio client, for a host that drives an SDK runtime directly.

`SDKClient` spawns and owns one runtime process and speaks newline-delimited JSON-RPC 2.0 on
its stdio; `run_prompt` returns a `RunTranscript`, `subscribe` a `Subscription` of
`Notification`s. A host that only wants SDK children in a registry needs none of this: it uses
`subagent_sdk.SDKProvider`.

Errors (all raised by the client):

    SDKError
     ├── JSONRPCError(code, message, data)
     ├── SDKProtocolError
     ├── TransportClosedError
     └── RequestTimeoutError
"""

from ._client import SDKClient as SDKClient
from ._errors import JSONRPCError as JSONRPCError
from ._errors import RequestTimeoutError as RequestTimeoutError
from ._errors import SDKError as SDKError
from ._errors import SDKProtocolError as SDKProtocolError
from ._errors import TransportClosedError as TransportClosedError
from ._framing import Notification as Notification
from ._run import new_session_id as new_session_id
from ._subscriptions import NotificationFilter as NotificationFilter
from ._subscriptions import Subscription as Subscription
from ._transcript import RunTranscript as RunTranscript
from ._wire import InitializeResult as InitializeResult
from ._wire import PromptResult as PromptResult
from ._wire import TurnEnd as TurnEnd

__all__ = [
    "InitializeResult",
    "JSONRPCError",
    "Notification",
    "NotificationFilter",
    "PromptResult",
    "RequestTimeoutError",
    "RunTranscript",
    "SDKClient",
    "SDKError",
    "SDKProtocolError",
    "Subscription",
    "TransportClosedError",
    "TurnEnd",
    "new_session_id",
]
