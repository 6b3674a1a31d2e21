"""harness: the reference harness and CLI for the subagent packages.

It runs the direct-model agent, serves it as an ACP agent (`harness acp-agent`) and over the
SDK stdio protocol (`harness sdk-runtime`), ships the scripted fakes and the keyless demo.
Importing this package stays cheap: the heavy modules (`acp`, `httpx`, model-agent) load only
when a command needs them.
"""

from ._config.loading import load_config as load_config
from ._config.settings import HarnessConfig as HarnessConfig
from ._config.settings import ModelSettings as ModelSettings
from ._config.settings import ProviderSettings as ProviderSettings
from ._config.toml_values import ConfigError as ConfigError

__all__ = [
    "ConfigError",
    "HarnessConfig",
    "ModelSettings",
    "ProviderSettings",
    "load_config",
]
