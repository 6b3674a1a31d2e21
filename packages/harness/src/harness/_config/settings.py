"""The typed, frozen settings `harness.toml` becomes: the model endpoint, providers, MCP servers.

A provider is `ProviderSettings`: who it is (`name`, `kind`, `preset`), what its child gets
from this host (`env` with its `${VAR}` references, `unset_env`, `credentials`), where the
child runs (`cwd`, `remote`, `ray`), and `config`, the provider's own frozen config
(`ACPConfig`, `SDKConfig`, `ClaudeConfig`, `CodexConfig`, or `ModelChildConfig` for the
in-process `model`) built from the table by `provider_tables`, so every value the provider
knows is checked once, by the provider, when the file is read.

The API key never lives in the file: it is read from `DEEPSEEK_API_KEY`, and a child's
credentials are references (`env = { KEY = "${VAR}" }`) resolved from the parent's environment
when the child is spawned, never printed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

from subagent_core import SSHRemote

from harness._console.exit_codes import UsageError

from .placement import RaySettings
from .toml_values import REFERENCE, ConfigError

if TYPE_CHECKING:
    from subagent_acp import ACPConfig
    from subagent_claude import ClaudeConfig
    from subagent_codex import CodexConfig
    from subagent_sdk import SDKConfig

ProviderKind = Literal["acp", "sdk", "model", "claude", "codex"]
"""`claude` and `codex` are the native providers (packages `subagent-claude`, `subagent-codex`)."""
PermissionAnswer = Literal["allow", "reject", "ask"]
"""How a child's permission requests are answered, as a table or `--permission` says it:
`ask` asks the person at this terminal (core's `PermissionPolicy` is a different thing: a
per-tool-kind mapping)."""
FileSystemMode = Literal["none", "read", "read-write"]
"""The client file system an ACP child is offered (`fs`, `--fs`)."""
WorkMode = Literal["ask", "execute"]
"""The direct-model agent's work mode: `ask` reads only; `execute` may run and write."""
DEFAULT_BASE_URL = "https://api.deepseek.com"
DEFAULT_MODEL = "deepseek-chat"
API_KEY_ENV = "DEEPSEEK_API_KEY"
BASE_URL_ENV = "DEEPSEEK_BASE_URL"
MODEL_ENV = "DEEPSEEK_MODEL"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSettings:
    """The model endpoint (`[model]`); flags and environment override the file."""

    base_url: str = DEFAULT_BASE_URL
    model: str = DEFAULT_MODEL
    max_tokens: int | None = None
    retry_statuses: tuple[int, ...] = ()
    """HTTP statuses to retry (empty: only transient network failures are retried)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChildConfig:
    """The in-process `model` provider's own config: all its table can say.

    model-agent's `AgentConfig` also needs the endpoint and the workspace, which are the
    run's, so `_registry` builds it from them and this when the provider is built.

    Raises:
        ValueError: `mode` is not `ask` or `execute` (worded as the provider configs word it).
    """

    mode: WorkMode = "ask"
    """The child's work mode."""

    def __post_init__(self) -> None:
        if self.mode not in ("ask", "execute"):
            raise ValueError('ModelChildConfig.mode must be "ask" or "execute"')


if TYPE_CHECKING:
    ProviderConfig: TypeAlias = (
        ACPConfig | SDKConfig | ClaudeConfig | CodexConfig | ModelChildConfig
    )
    ChildConfig: TypeAlias = ACPConfig | SDKConfig | ClaudeConfig | CodexConfig
    """The configs of the kinds that start a child process."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSettings:
    """One provider: a `[providers.<name>]` table, a built-in, or an agent by name.

    `config` holds every value the provider itself checks. What it does not hold is laid over
    it by `_registry` when the provider is built, because only then is it known, or may it
    fail: the registry name (`name`), the child's env (references resolve at spawn), its
    working directory (it may not exist yet), its placement (Ray needs its package), its
    stderr log (one per command) and, for a native kind, the command as written (the provider
    finds its CLI where the child runs).
    """

    name: str
    kind: ProviderKind
    config: ProviderConfig
    """The provider's own frozen config, built from the table (`provider_tables`)."""
    command: str | None = None
    """argv[0] as written or from the preset (`config` holds the checked one); None lets a
    native provider find its CLI itself."""
    preset: str | None = None
    """The preset this provider was made from (`harness agents` names it), or None."""
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    """Explicit child variables as written: `${VAR}` references resolve at spawn time."""
    unset_env: tuple[str, ...] = ()
    """Host variables removed from the child's inherited environment (a preset's)."""
    credentials: tuple[str, ...] = ()
    """Credential variables handed to the child as `${VAR}` when set in the environment."""
    requires_credential: bool = False
    """At least one of `credentials` must be set, else the child is not started."""
    cwd: Path | None = None
    """The child's working directory (relative to the file); None: the request's workspace."""
    remote: SSHRemote | None = None
    """Run the child on another host through `ssh` (the `remote = {…}` table)."""
    ray: RaySettings | None = None
    """Run the child on a Ray cluster node (`placement = "ray"`, `ray = {…}`)."""
    source: Path | None = field(default=None, compare=False)
    """The file this table came from (None for a built-in); errors at spawn time name it."""

    @property
    def args(self) -> tuple[str, ...]:
        """The child's argv tail (none for the in-process `model`)."""
        if isinstance(self.config, ModelChildConfig):
            return ()
        return tuple(self.config.args)

    @property
    def permission(self) -> PermissionAnswer:
        """The table's answer to permission requests: `ask` is the terminal prompt it set."""
        setting: object = getattr(self.config, "permission", "reject")
        if setting == "allow":
            return "allow"
        return "ask" if callable(setting) else "reject"

    def resolved_env(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """`env` with every `${VAR}` replaced from `environ` (default: this process's), plus
        the credential variables that are set.

        Raises:
            ConfigError: a referenced variable is not set (the error names it, never a value).
            MissingCredentialError: the provider needs one of its credential variables and
                none is set.
        """
        parent = os.environ if environ is None else environ
        present = [name for name in self.credentials if parent.get(name)]
        if self.requires_credential and not present:
            raise MissingCredentialError(self.name, self.credentials)
        written = {name: f"${{{name}}}" for name in present if name not in self.env}
        return resolve_references(
            {**written, **self.env},
            f"providers.{self.name}.env",
            source=self.source,
            environ=parent,
        )

    def explicit_env(self, environ: Mapping[str, str] | None = None) -> dict[str, str | None]:
        """The child's explicit env: `resolved_env`, and `None` for each name it must not
        inherit (`unset_env`).

        Raises:
            ConfigError: a referenced variable is not set.
            MissingCredentialError: a needed credential variable is not set.
        """
        explicit: dict[str, str | None] = dict.fromkeys(self.unset_env)
        explicit.update(self.resolved_env(environ))
        return explicit


class MissingCredentialError(UsageError):
    """A provider needs a credential variable and none of its variables is set (names only)."""

    def __init__(self, name: str, variables: tuple[str, ...]) -> None:
        wanted = " or ".join(variables)
        first = variables[0] if variables else "the key"
        super().__init__(
            f'"{name}" needs {wanted} set in the environment (export {first}=...); it is '
            "handed to the child and never stored or printed"
        )
        self.variables = variables


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPServerSettings:
    """One `[mcp.<name>]` table (or `--mcp` flag): a stdio command or a streamable HTTP URL."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    """Explicit server variables as written: `${VAR}` references resolve at spawn time."""
    cwd: Path | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    """HTTP headers as written: `${VAR}` references resolve when the run starts."""
    source: Path | None = field(default=None, compare=False)

    def resolved(
        self, environ: Mapping[str, str] | None = None
    ) -> tuple[dict[str, str], dict[str, str]]:
        """(`env`, `headers`) with every `${VAR}` replaced from `environ`.

        Raises:
            ConfigError: a referenced variable is not set.
        """
        prefix = f"mcp.{self.name}"
        return (
            resolve_references(self.env, f"{prefix}.env", source=self.source, environ=environ),
            resolve_references(
                self.headers, f"{prefix}.headers", source=self.source, environ=environ
            ),
        )


def resolve_references(
    values: Mapping[str, str],
    prefix: str,
    *,
    source: Path | None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """`values` with every `${VAR}` replaced from `environ` (default: this process's).

    Raises:
        ConfigError: a referenced variable is not set (the error names it, never a value).
    """
    parent = os.environ if environ is None else environ
    resolved: dict[str, str] = {}
    for key, value in values.items():

        def substitute(match: re.Match[str], key: str = key) -> str:
            name = match.group(1)
            if name not in parent:
                raise ConfigError(
                    f"{prefix}.{key}",
                    f"references ${{{name}}}, which is not set in the environment",
                    file=source,
                )
            return parent[name]

        resolved[key] = REFERENCE.sub(substitute, value)
    return resolved


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessConfig:
    """Everything harness.toml configures; `path` is None when defaults were used."""

    model: ModelSettings = field(default_factory=ModelSettings)
    providers: tuple[ProviderSettings, ...] = ()
    mcp: tuple[MCPServerSettings, ...] = ()
    """MCP servers every `harness run` connects (their tools are offered as `<name>__<tool>`)."""
    path: Path | None = None

    def provider(self, name: str) -> ProviderSettings | None:
        """The provider named `name`, or None."""
        for settings in self.providers:
            if settings.name == name:
                return settings
        return None
