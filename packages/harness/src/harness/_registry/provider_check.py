"""`harness providers`: list providers and try starting each one."""

from __future__ import annotations

import shlex
from pathlib import Path

import anyio
from rich.markup import escape
from rich.table import Table
from subagent_core import SubagentProvider, SubagentRequest, SubagentStartError
from subagent_core.kit import ClosableProvider

from harness._config.endpoint import MissingKeyError, ResolvedEndpoint, resolve_endpoint
from harness._config.loading import load_config
from harness._config.paths import workspace_path
from harness._config.settings import HarnessConfig, ProviderSettings
from harness._console.consoles import output_console
from harness._console.exit_codes import EXIT_INCOMPLETE, EXIT_OK, UsageError
from harness._console.ndjson import emit
from harness._console.start_failure import SPAWN_HINTS, spawn_reason

from .build import build_provider, is_builtin, provider_settings

CHECK_TIMEOUT_SECONDS = 30.0


def show_providers(
    config: HarnessConfig, *, workspace: Path, check: bool, json: bool = False
) -> int:
    """Prints the providers table (or NDJSON); exit 0 when every checked provider started."""
    try:
        endpoint: ResolvedEndpoint | None = resolve_endpoint(config.model)
    except MissingKeyError:
        endpoint = None
    settings = provider_settings(config, endpoint)
    if not check:
        statuses = ["not checked"] * len(settings)
    else:
        statuses = anyio.run(_check_all, config, settings, endpoint, workspace, backend="asyncio")
    ok = all(status in ("ok", "not checked") for status in statuses)
    code = EXIT_OK if ok else EXIT_INCOMPLETE
    if json:
        for item, status in zip(settings, statuses, strict=True):
            emit(
                {
                    "type": "provider",
                    "name": item.name,
                    "kind": item.kind,
                    "command": [item.command, *item.args] if item.command else None,
                    "permission": item.permission
                    if item.kind in ("acp", "claude", "codex")
                    else None,
                    "builtin": is_builtin(config, item),
                    "status": status,
                    "ok": status in ("ok", "not checked"),
                }
            )
        source = str(config.path) if config.path is not None else None
        emit({"type": "summary", "config": source, "ok": ok, "exit_code": code})
        return code
    source = str(config.path) if config.path is not None else "built-in defaults (no harness.toml)"
    table = Table(title=f"providers ({source})", show_lines=True)
    for column in ("name", "kind", "command", "permission", "check"):
        table.add_column(column, overflow="fold")
    for item, status in zip(settings, statuses, strict=True):
        command = shlex.join([item.command, *item.args]) if item.command else _no_command(item)
        table.add_row(
            escape(item.name),
            item.kind,
            escape(command),
            item.permission if item.kind in ("acp", "claude", "codex") else "—",
            escape(status),
        )
    output_console().print(table)
    return code


def _no_command(item: ProviderSettings) -> str:
    return "claude (PATH or subagent-claude[cli])" if item.kind == "claude" else "(in-process)"


async def _check_all(
    config: HarnessConfig,
    settings: list[ProviderSettings],
    endpoint: ResolvedEndpoint | None,
    workspace: Path,
) -> list[str]:
    statuses: list[str] = []
    for item in settings:
        if endpoint is None and (item.kind == "model" or is_builtin(config, item)):
            # The built-ins are this harness on the model endpoint: without a key they cannot work.
            statuses.append("needs DEEPSEEK_API_KEY")
        else:
            statuses.append(await check_provider(item, endpoint, workspace))
    return statuses


async def check_provider(
    item: ProviderSettings, endpoint: ResolvedEndpoint | None, workspace: Path
) -> str:
    """Starts `item` once (ACP: initialize + session/new; SDK: initialize); its status line."""
    if item.kind == "model":
        return "ok"
    try:
        provider = build_provider(item, endpoint=endpoint, workspace=workspace)
    except (ValueError, UsageError) as error:
        return f"bad configuration: {error}"
    try:
        return await _start_once(provider, workspace)
    finally:
        # A provider's warm children (if it keeps any) must not outlive the check.
        if isinstance(provider, ClosableProvider):
            await provider.aclose()


async def _start_once(provider: SubagentProvider, workspace: Path) -> str:
    request = SubagentRequest(prompt="", cwd=workspace, label="providers check")
    try:
        with anyio.fail_after(CHECK_TIMEOUT_SECONDS):
            run = await provider.start(request)
    except SubagentStartError as error:
        hint = SPAWN_HINTS.get(spawn_reason(error) or "")
        return f"failed: {error}" + (f" — {hint}" if hint else "")
    except TimeoutError:
        return "failed: the handshake did not finish in time"
    request.cancel.cancel()
    teardown = await run.dispose()
    return "ok" if teardown is None else f"ok, but {teardown}"


def providers_command(
    *, workspace: Path | None, config: Path | None, check: bool, json: bool
) -> int:
    """`harness providers`: the workspace's providers listed (and started once); the code.

    Raises:
        UsageError: the workspace is not accessible, or the config is bad.
    """
    root = workspace_path(workspace)
    settings = load_config(config, workspace=root)
    return show_providers(settings, workspace=root, check=check, json=json)
