"""`harness.toml`: the model endpoint and the configured providers.

Example::

    [model]
    base_url = "https://api.deepseek.com"   # any OpenAI-compatible server
    model = "deepseek-chat"

    [providers.claude]
    kind = "acp"
    command = "claude-agent-acp"
    permission = "reject"

    [providers.codex]
    kind = "codex"                # codex app-server, natively (command: codex on PATH)
    sandbox = "read-only"
    config_overrides = { model = '"gpt-5"' }

    [providers.dsh-sdk]
    kind = "sdk"
    command = "harness"
    args = ["sdk-runtime"]
    placement = "ray"             # or an ssh `remote = {…}`; see _placement_config
    ray = { resources = { node_b = 0.001 } }

Discovery: `--config PATH`, else `<workspace>/harness.toml`, else `harness.toml` in the user
config directory (`platformdirs`: `$XDG_CONFIG_HOME/harness/` on Linux), else the defaults. A
table under `[providers]` adds a provider or replaces the built-in of the same name; the other
built-ins stay.

The API key never lives in the file: it is read from `DEEPSEEK_API_KEY`, and a child's
credentials are references (`env = { KEY = "${VAR}" }`) resolved from the parent's environment
when the child is spawned, never printed. Every problem is a `ConfigError` naming the file and
the offending key, so the CLI can print one line and exit 2.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

from subagent_core import SSHRemote

from ._exit import UsageError
from ._placement_config import PLACEMENT_KEYS, RaySettings, read_placement
from ._presets import NATIVE_KINDS, Preset, find_preset, preset_names
from ._toml_values import (
    CONFIG_FILE_NAME,
    REFERENCE,
    ConfigError,
    read_list,
    read_optional_string,
    read_positive_int,
    read_seconds,
    read_string,
    read_string_table,
    read_table,
    reject_unknown,
)

ProviderKind = Literal["acp", "sdk", "model", "claude", "codex"]
"""`claude` and `codex` are the native providers (packages `subagent-claude`, `subagent-codex`)."""
PermissionPolicy = Literal["allow", "reject", "ask"]
"""How an ACP child's permission requests are answered; `ask` asks at the terminal."""
FileSystemMode = Literal["none", "read", "read-write"]
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
class ProviderSettings:
    """One `[providers.<name>]` table."""

    name: str
    kind: ProviderKind
    command: str | None = None
    args: tuple[str, ...] = ()
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    """Explicit child variables as written: `${VAR}` references resolve at spawn time."""
    permission: PermissionPolicy = "reject"
    """ACP and claude: how the child's permission requests (and file writes, terminals) are
    answered."""
    fs: FileSystemMode = "none"
    """ACP only: the client file system offered to the child, confined to the workspace."""
    terminal: bool = False
    """ACP only: offer client terminals (commands run as processes of the run)."""
    sdk_provider: str = "deepseek-official"
    """SDK only: the `provider` sent in `initialize`."""
    sdk_model: str = DEFAULT_MODEL
    claude_model: str | None = None
    """claude only: `--model` (None: the CLI's default)."""
    max_tokens: int | None = None
    mode: Literal["ask", "execute"] = "ask"
    """model only: the child's work mode."""
    sandbox: Literal["read-only", "workspace-write", "danger-full-access"] = "workspace-write"
    """codex only: the thread's sandbox."""
    codex_model: str | None = None
    """codex only: the thread's model (`None`: codex's own default)."""
    config_overrides: Mapping[str, str] = field(default_factory=dict[str, str])
    """codex only: `-c KEY=VALUE` overrides (VALUE is TOML)."""
    dispose_eof_grace_seconds: float = 0.5
    """acp/sdk: after stdin EOF, before SIGTERM (the providers' default; real agents ignore EOF)."""
    dispose_grace_seconds: float = 0.5
    dispose_kill_grace_seconds: float = 3.0
    remote: SSHRemote | None = None
    """Process kinds: run the child on another host through `ssh` (the `remote = {…}` table)."""
    ray: RaySettings | None = None
    """Process kinds: run the child on a Ray cluster node (`placement = "ray"`, `ray = {…}`)."""
    preset: str | None = None
    """The preset this provider was made from (`harness agents` names it), or None."""
    child_model: str | None = None
    """acp/claude/codex: the model the child should use (None: the child's own default)."""
    child_mode: str | None = None
    """acp: the session mode selected after `session/new` (None: the child's default)."""
    unset_env: tuple[str, ...] = ()
    """Host variables removed from the child's inherited environment (a preset's)."""
    credentials: tuple[str, ...] = ()
    """Credential variables handed to the child as `${VAR}` when set in the environment."""
    requires_credential: bool = False
    """At least one of `credentials` must be set, else the child is not started."""
    source: Path | None = field(default=None, compare=False)
    """The file this table came from (None for a built-in); errors at spawn time name it."""

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


_MODEL_KEYS = {"base_url", "model", "max_tokens", "retry_statuses"}
_COMMON_KEYS = {"kind"}
_PROCESS_KEYS = {
    "command",
    "args",
    "cwd",
    "env",
    "dispose_eof_grace_seconds",
    "dispose_grace_seconds",
    "dispose_kill_grace_seconds",
    *PLACEMENT_KEYS,
}
_KIND_KEYS: dict[str, set[str]] = {
    "acp": _COMMON_KEYS | _PROCESS_KEYS | {"permission", "fs", "terminal", "model", "mode"},
    "sdk": _COMMON_KEYS | _PROCESS_KEYS | {"provider", "model", "max_tokens"},
    "model": _COMMON_KEYS | {"mode"},
    "claude": _COMMON_KEYS | _PROCESS_KEYS | {"permission", "model"},
    "codex": _COMMON_KEYS | _PROCESS_KEYS | {"permission", "sandbox", "model", "config_overrides"},
}


def user_config_path() -> Path:
    """`harness.toml` in the user config directory (`$XDG_CONFIG_HOME/harness/` on Linux)."""
    from platformdirs import user_config_path as config_dir

    return config_dir("harness", appauthor=False) / CONFIG_FILE_NAME


def find_config(path: Path | None = None, *, workspace: Path | None = None) -> Path | None:
    """The file to read: `path`, else the workspace's harness.toml, else the user's, else None."""
    if path is not None:
        return path
    for candidate in ((workspace or Path.cwd()) / CONFIG_FILE_NAME, user_config_path()):
        if candidate.is_file():
            return candidate
    return None


def load_config(path: Path | None = None, *, workspace: Path | None = None) -> HarnessConfig:
    """Reads the file `find_config` picks, or returns the defaults when there is none.

    Raises:
        ConfigError: the file cannot be read or parsed, or a key has a bad value.
    """
    found = find_config(path, workspace=workspace)
    if found is None:
        return HarnessConfig()
    try:
        raw = tomllib.loads(found.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("(file)", "does not exist", file=found) from None
    except (OSError, UnicodeDecodeError):
        raise ConfigError("(file)", "cannot be read", file=found) from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError("(file)", f"not valid TOML ({error})", file=found) from None
    return parse_config(raw, path=found)


def parse_config(raw: Mapping[str, object], *, path: Path | None = None) -> HarnessConfig:
    """Validates an already-parsed TOML document; `path` is the file it came from.

    Raises:
        ConfigError: a key has a bad value or is unknown (the message names `path`).
    """
    try:
        return _parse(raw, path)
    except ConfigError as error:
        if error.file is None and path is not None:
            raise ConfigError(error.key, error.problem, file=path) from None
        raise


def _parse(raw: Mapping[str, object], path: Path | None) -> HarnessConfig:
    for key in raw:
        if key not in ("model", "providers", "mcp"):
            raise ConfigError(
                key, "unknown key (expected [model], [providers.<name>] and [mcp.<name>])"
            )
    base = path.resolve().parent if path is not None else Path.cwd()
    model = _model(read_table(raw.get("model", {}), "model"))
    providers_raw = read_table(raw.get("providers", {}), "providers")
    providers = tuple(
        _provider(name, read_table(value, f"providers.{name}"), base, path)
        for name, value in providers_raw.items()
    )
    mcp_raw = read_table(raw.get("mcp", {}), "mcp")
    mcp = tuple(
        _mcp_server(name, read_table(value, f"mcp.{name}"), base, path)
        for name, value in mcp_raw.items()
    )
    return HarnessConfig(model=model, providers=providers, mcp=mcp, path=path)


def _model(table: dict[str, object]) -> ModelSettings:
    reject_unknown(table, _MODEL_KEYS, "model")
    statuses = read_list(table, "retry_statuses", "model", item=int)
    for status in statuses:
        if not 100 <= status <= 599:
            raise ConfigError("model.retry_statuses", "must list HTTP status codes (100-599)")
    return ModelSettings(
        base_url=read_string(table, "base_url", "model", DEFAULT_BASE_URL),
        model=read_string(table, "model", "model", DEFAULT_MODEL),
        max_tokens=read_positive_int(table, "max_tokens", "model"),
        retry_statuses=tuple(statuses),
    )


def _provider(
    name: str, table: dict[str, object], base: Path, source: Path | None
) -> ProviderSettings:
    prefix = f"providers.{name}"
    if not name.strip():
        raise ConfigError(prefix, "a provider name must not be empty")
    preset = _preset(table, prefix)
    kind = table.get("kind", preset.kind if preset is not None else None)
    if kind not in _KIND_KEYS:
        raise ConfigError(
            f"{prefix}.kind", 'must be "acp", "sdk", "model", "claude" or "codex" (or give preset)'
        )
    kind = cast(ProviderKind, kind)
    if preset is not None and kind != preset.kind:
        raise ConfigError(f"{prefix}.kind", f'preset "{preset.name}" is of kind "{preset.kind}"')
    reject_unknown(table, _KIND_KEYS[kind] | ({"preset"} if preset else set()), prefix)
    if kind == "model":
        mode = read_string(table, "mode", prefix, "ask")
        if mode not in ("ask", "execute"):
            raise ConfigError(f"{prefix}.mode", 'must be "ask" or "execute"')
        return ProviderSettings(name=name, kind=kind, mode=mode, source=source)
    command = read_optional_string(table, "command", prefix)
    if command is None and preset is not None and kind not in NATIVE_KINDS:
        command = preset.command or preset.program
    if command is None and kind not in NATIVE_KINDS:
        # The native providers find their CLI themselves (on PATH or bundled in a wheel).
        raise ConfigError(f"{prefix}.command", "is required (the program to start)")
    sandbox = read_string(table, "sandbox", prefix, "workspace-write")
    if sandbox not in ("read-only", "workspace-write", "danger-full-access"):
        raise ConfigError(
            f"{prefix}.sandbox", 'must be "read-only", "workspace-write" or "danger-full-access"'
        )
    cwd_text = read_optional_string(table, "cwd", prefix)
    cwd = None if cwd_text is None else (base / cwd_text).resolve()
    env = read_string_table(table, "env", prefix)
    if preset is not None:
        env = {**preset.env, **env}
    permission = read_string(table, "permission", prefix, "reject")
    if permission not in ("allow", "reject", "ask"):
        raise ConfigError(f"{prefix}.permission", 'must be "allow", "reject" or "ask"')
    fs = read_string(table, "fs", prefix, "none")
    if fs not in ("none", "read", "read-write"):
        raise ConfigError(f"{prefix}.fs", 'must be "none", "read" or "read-write"')
    terminal = table.get("terminal", False)
    if not isinstance(terminal, bool):
        raise ConfigError(f"{prefix}.terminal", "must be true or false")
    args = tuple(read_list(table, "args", prefix, item=str))
    remote, ray = read_placement(table, base, prefix)
    if preset is not None and "args" not in table:
        args = preset.args
    return ProviderSettings(
        name=name,
        kind=kind,
        command=command,
        args=args,
        cwd=cwd,
        env=env,
        permission=permission,
        fs=fs,
        terminal=terminal,
        sdk_provider=read_string(table, "provider", prefix, "deepseek-official"),
        sdk_model=read_string(table, "model", prefix, DEFAULT_MODEL),
        claude_model=read_optional_string(table, "model", prefix) if kind == "claude" else None,
        child_model=read_optional_string(table, "model", prefix) if kind != "sdk" else None,
        child_mode=read_optional_string(table, "mode", prefix) or (preset.mode if preset else None),
        max_tokens=read_positive_int(table, "max_tokens", prefix),
        sandbox=sandbox,
        codex_model=read_optional_string(table, "model", prefix) if kind == "codex" else None,
        config_overrides=read_string_table(table, "config_overrides", prefix),
        dispose_eof_grace_seconds=read_seconds(
            table,
            "dispose_eof_grace_seconds",
            prefix,
            preset.dispose_eof_grace_seconds if preset else 0.5,
        ),
        dispose_grace_seconds=read_seconds(
            table, "dispose_grace_seconds", prefix, preset.dispose_grace_seconds if preset else 0.5
        ),
        dispose_kill_grace_seconds=read_seconds(
            table,
            "dispose_kill_grace_seconds",
            prefix,
            preset.dispose_kill_grace_seconds if preset else 3.0,
        ),
        remote=remote,
        ray=ray,
        preset=None if preset is None else preset.name,
        unset_env=() if preset is None else preset.unset,
        credentials=() if preset is None else preset.credentials,
        requires_credential=False if preset is None else preset.requires_credential,
        source=source,
    )


def _preset(table: Mapping[str, object], prefix: str) -> Preset | None:
    name = read_optional_string(table, "preset", prefix)
    if name is None:
        return None
    preset = find_preset(name)
    if preset is None:
        raise ConfigError(f"{prefix}.preset", f"must be one of {', '.join(preset_names())}")
    return preset


_MCP_STDIO_KEYS = {"command", "args", "env", "cwd"}
_MCP_HTTP_KEYS = {"url", "headers"}


def _mcp_server(
    name: str, table: dict[str, object], base: Path, source: Path | None
) -> MCPServerSettings:
    prefix = f"mcp.{name}"
    if "url" in table:
        reject_unknown(table, _MCP_HTTP_KEYS, prefix)
        url = read_optional_string(table, "url", prefix)
        if url is None or not url.startswith(("http://", "https://")):
            raise ConfigError(f"{prefix}.url", "must be an http:// or https:// URL")
        return MCPServerSettings(
            name=name, url=url, headers=read_string_table(table, "headers", prefix), source=source
        )
    reject_unknown(table, _MCP_STDIO_KEYS, prefix)
    command = read_optional_string(table, "command", prefix)
    if command is None:
        raise ConfigError(prefix, "needs command (a stdio server) or url (streamable HTTP)")
    cwd_text = read_optional_string(table, "cwd", prefix)
    return MCPServerSettings(
        name=name,
        command=command,
        args=tuple(read_list(table, "args", prefix, item=str)),
        env=read_string_table(table, "env", prefix),
        cwd=None if cwd_text is None else (base / cwd_text).resolve(),
        source=source,
    )


def parse_mcp_flag(value: str) -> MCPServerSettings:
    """`--mcp NAME=URL` (streamable HTTP) or `--mcp "NAME=COMMAND [ARGS…]"` (stdio, shell-split).

    Raises:
        UsageError: the value is not of either form.
    """
    import shlex

    name, sep, rest = value.partition("=")
    if not sep or not name.strip() or not rest.strip():
        raise UsageError('--mcp: expected NAME=URL or "NAME=COMMAND [ARGS...]"')
    if rest.startswith(("http://", "https://")):
        return MCPServerSettings(name=name, url=rest)
    try:
        argv = shlex.split(rest)
    except ValueError:
        raise UsageError(f"--mcp {name}: the command line has unbalanced quotes") from None
    return MCPServerSettings(name=name, command=argv[0], args=tuple(argv[1:]))
