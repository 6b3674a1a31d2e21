"""`harness providers`: list providers and try starting each one."""

from __future__ import annotations

import shlex
from pathlib import Path

import anyio
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from subagent_core import SubagentRequest, SubagentStartError

from ._config import HarnessConfig, ProviderSettings
from ._endpoint import MissingKeyError, ResolvedEndpoint, resolve_endpoint
from ._exit import EXIT_INCOMPLETE, EXIT_OK, UsageError
from ._providers import build_provider, provider_settings

CHECK_TIMEOUT_SECONDS = 30.0


def show_providers(config: HarnessConfig, *, workspace: Path, check: bool) -> int:
    """Prints the providers table; exit 0 when every checked provider started."""
    try:
        endpoint: ResolvedEndpoint | None = resolve_endpoint(config.model)
    except MissingKeyError:
        endpoint = None
    settings = provider_settings(config, endpoint)
    if not check:
        statuses = ["not checked"] * len(settings)
    elif endpoint is None and not config.providers:
        # The built-ins are this harness on the model endpoint: without a key they cannot work.
        statuses = ["needs DEEPSEEK_API_KEY"] * len(settings)
    else:
        statuses = anyio.run(_check_all, settings, endpoint, workspace, backend="asyncio")
    source = str(config.path) if config.path is not None else "built-in defaults (no harness.toml)"
    table = Table(title=f"providers ({source})", show_lines=True)
    for column in ("name", "kind", "command", "permission", "check"):
        table.add_column(column, overflow="fold")
    for item, status in zip(settings, statuses, strict=True):
        command = shlex.join([item.command, *item.args]) if item.command else "(in-process)"
        table.add_row(
            escape(item.name),
            item.kind,
            escape(command),
            item.permission if item.kind == "acp" else "—",
            escape(status),
        )
    Console().print(table)
    ok = all(status in ("ok", "not checked") for status in statuses)
    return EXIT_OK if ok else EXIT_INCOMPLETE


async def _check_all(
    settings: list[ProviderSettings], endpoint: ResolvedEndpoint | None, workspace: Path
) -> list[str]:
    return [await _check(item, endpoint, workspace) for item in settings]


async def _check(item: ProviderSettings, endpoint: ResolvedEndpoint | None, workspace: Path) -> str:
    if item.kind == "model":
        return "ok" if endpoint is not None else "needs DEEPSEEK_API_KEY"
    try:
        provider = build_provider(item, endpoint=endpoint, workspace=workspace)
    except (ValueError, UsageError) as error:
        return f"bad configuration: {error}"
    request = SubagentRequest(prompt="", cwd=workspace, label="providers check")
    try:
        with anyio.fail_after(CHECK_TIMEOUT_SECONDS):
            run = await provider.start(request)
    except SubagentStartError as error:
        return f"failed: {error}"
    except TimeoutError:
        return "failed: the handshake did not finish in time"
    request.cancel.cancel()
    teardown = await run.dispose()
    return "ok" if teardown is None else f"ok, but {teardown}"
