"""subagent-sdk: drive a harness runtime over the stdio SDK protocol.

Wire-compatible with the DeepSeek Harness SDK runtime: newline-delimited JSON-RPC 2.0 on the
runtime's stdio. `SDKClient` is the typed client; `SDKProvider` plugs SDK children into a
`subagent_core.SubagentRegistry` with safe failure facts; `subagent_sdk.wire` is the framing and
vocabulary for either end (a runtime builds on it); `subagent_sdk.testing` is the scripted fake
runtime.

Errors (all raised by the client):

    SDKError
     ├── JSONRPCError(code, message, data)
     ├── SDKProtocolError
     ├── TransportClosedError
     └── RequestTimeoutError
"""

from ._client import SDKClient as SDKClient
from ._config import DEFAULT_PROVIDER_NAME as DEFAULT_PROVIDER_NAME
from ._config import SDKConfig as SDKConfig
from ._errors import JSONRPCError as JSONRPCError
from ._errors import RequestTimeoutError as RequestTimeoutError
from ._errors import SDKError as SDKError
from ._errors import SDKProtocolError as SDKProtocolError
from ._errors import TransportClosedError as TransportClosedError
from ._facts import error_category as error_category
from ._facts import turn_end_result as turn_end_result
from ._framing import Notification as Notification
from ._provider import SDKProvider as SDKProvider
from ._run import new_session_id as new_session_id
from ._subscriptions import NotificationFilter as NotificationFilter
from ._subscriptions import Subscription as Subscription
from ._transcript import RunTranscript as RunTranscript
from ._wire import InitializeResult as InitializeResult
from ._wire import PromptResult as PromptResult
from ._wire import TurnEnd as TurnEnd

__all__ = [
    "DEFAULT_PROVIDER_NAME",
    "InitializeResult",
    "JSONRPCError",
    "Notification",
    "NotificationFilter",
    "PromptResult",
    "RequestTimeoutError",
    "RunTranscript",
    "SDKClient",
    "SDKConfig",
    "SDKError",
    "SDKProtocolError",
    "SDKProvider",
    "Subscription",
    "TransportClosedError",
    "TurnEnd",
    "error_category",
    "new_session_id",
    "turn_end_result",
]
