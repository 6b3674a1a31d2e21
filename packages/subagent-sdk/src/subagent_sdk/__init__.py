"""subagent-sdk: SDK children for a `subagent_core.SubagentRegistry`.

Wire-compatible with the DeepSeek Harness SDK runtime: newline-delimited JSON-RPC 2.0 on the
runtime's stdio. `SDKProvider` (configured by a frozen `SDKConfig`) plugs SDK children into a
registry with safe failure facts; that is this module's whole face. The other audiences have
their own modules: `subagent_sdk.client` is the typed client for a host that drives a runtime
directly (`SDKClient`, its errors and results); `subagent_sdk.wire` is the framing and
vocabulary for either end (a runtime builds on it); `subagent_sdk.testing` is the scripted fake
runtime.
"""

from ._config import DEFAULT_PROVIDER_NAME as DEFAULT_PROVIDER_NAME
from ._config import SDKConfig as SDKConfig
from ._provider import SDKProvider as SDKProvider

__all__ = [
    "DEFAULT_PROVIDER_NAME",
    "SDKConfig",
    "SDKProvider",
]
