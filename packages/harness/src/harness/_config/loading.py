"""`harness.toml` found and read: the `[model]`, `[providers.<name>]` and `[mcp.<name>]` tables.

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
    placement = "ray"             # or an ssh `remote = {…}`; see placement
    ray = { resources = { node_b = 0.001 } }

Discovery: `--config PATH`, else `<workspace>/harness.toml`, else `harness.toml` in the user
config directory (`platformdirs`: `$XDG_CONFIG_HOME/harness/` on Linux), else the defaults. A
table under `[providers]` adds a provider or replaces the built-in of the same name; the other
built-ins stay. Every problem is a `ConfigError` naming the file and the offending key, so the
CLI can print one line and exit 2.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path

from harness._console.exit_codes import UsageError

from .provider_tables import provider_from_table
from .settings import (
    DEFAULT_BASE_URL,
    DEFAULT_MODEL,
    HarnessConfig,
    MCPServerSettings,
    ModelSettings,
)
from .toml_values import (
    CONFIG_FILE_NAME,
    ConfigError,
    read_list,
    read_optional_string,
    read_positive_int,
    read_string,
    read_string_table,
    read_table,
    reject_unknown,
)

_MODEL_KEYS = {"base_url", "model", "max_tokens", "retry_statuses"}
_MCP_STDIO_KEYS = {"command", "args", "env", "cwd"}
_MCP_HTTP_KEYS = {"url", "headers"}


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
        provider_from_table(name, read_table(value, f"providers.{name}"), base=base, source=path)
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
