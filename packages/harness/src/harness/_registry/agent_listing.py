"""`harness agents`: every preset and configured provider, found or not, and what it lacks.

Found means the program is on PATH (a native provider also needs its package). The version is
what the program answers to `--version` within a few seconds, reduced to a version-shaped
token: the child writes that text, so nothing else of it is shown. Credentials are named,
never valued. `--check` also starts each found one, as `harness providers` does.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
from rich.markup import escape
from rich.table import Table
from subagent_core import child_env
from subagent_core.kit import SpawnError, open_managed_process

from harness._config.endpoint import MissingKeyError, ResolvedEndpoint, resolve_endpoint
from harness._config.loading import load_config
from harness._config.paths import workspace_path
from harness._config.presets import NATIVE_KINDS, NATIVE_PACKAGES, PRESETS, find_preset
from harness._config.provider_tables import preset_settings
from harness._config.settings import HarnessConfig, ProviderSettings
from harness._console.consoles import output_console
from harness._console.exit_codes import EXIT_INCOMPLETE, EXIT_OK
from harness._console.ndjson import emit

from .native import native_installed

VERSION_TIMEOUT_SECONDS: Final = 10.0
"""How long `--version` may take (a Node agent on a loaded machine needs a few seconds)."""
VERSION_READ_BYTES: Final = 4096
"""How much of the `--version` answer is read; the rest is never looked at."""
_VERSION: Final = re.compile(rb"\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.]{1,32})?")


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentRow:
    """One line of the table."""

    settings: ProviderSettings
    configured: bool
    """From harness.toml (else a preset named with no table)."""
    installed: bool
    """The provider package can be imported (always true for ACP)."""
    path: str | None
    """Where the program was found on PATH, or None."""
    version: str | None = None
    credentials_set: tuple[str, ...] = ()
    credentials_missing: tuple[str, ...] = ()
    install: str | None = None
    check: str | None = None

    @property
    def found(self) -> bool:
        return self.installed and self.path is not None

    @property
    def lacks_credential(self) -> bool:
        return self.settings.requires_credential and not self.credentials_set

    @property
    def ok(self) -> bool:
        return self.check is None or self.check.startswith("ok")


def agent_rows(config: HarnessConfig, environ: dict[str, str] | None = None) -> list[AgentRow]:
    """The presets (each replaced by a configured table of its name), then the other tables."""
    env = dict(os.environ) if environ is None else environ
    configured = {item.name: item for item in config.providers if item.kind != "model"}
    rows = [
        _row(configured.get(preset.name) or preset_settings(preset), preset.name in configured, env)
        for preset in PRESETS
    ]
    preset_names = {preset.name for preset in PRESETS}
    rows += [_row(item, True, env) for name, item in configured.items() if name not in preset_names]
    return rows


def _row(settings: ProviderSettings, configured: bool, environ: dict[str, str]) -> AgentRow:
    preset = find_preset(settings.preset or "")
    installed = settings.kind not in NATIVE_KINDS or native_installed(settings.kind)
    program = settings.command or (preset.program if preset else settings.kind)
    elsewhere = settings.remote is not None or settings.ray is not None
    path = None if elsewhere else shutil.which(program, path=environ.get("PATH"))
    install = preset.install if preset else None
    if settings.kind in NATIVE_KINDS and not installed:
        install = f"pip install '{NATIVE_PACKAGES[settings.kind][1]}[cli]'"
    present = tuple(name for name in settings.credentials if environ.get(name))
    missing = tuple(name for name in settings.credentials if not environ.get(name))
    return AgentRow(
        settings=settings,
        configured=configured,
        installed=installed,
        path=path,
        credentials_set=present,
        credentials_missing=missing,
        install=install,
    )


async def probe_versions(rows: Sequence[AgentRow]) -> list[AgentRow]:
    """Each found row with the version its program answers (concurrently, each bounded)."""
    versions: list[str | None] = [None] * len(rows)

    async def probe(index: int, row: AgentRow) -> None:
        versions[index] = await program_version(row)

    async with anyio.create_task_group() as tg:
        for index, row in enumerate(rows):
            if row.found:
                tg.start_soon(probe, index, row)
    return [_with(row, version=version) for row, version in zip(rows, versions, strict=True)]


async def program_version(row: AgentRow) -> str | None:
    """The version token of `PROGRAM --version`, or None (no answer in time, none printed)."""
    assert row.path is not None
    argv = [row.path, "--version"]
    if row.path == sys.executable:
        argv = [row.path, "-m", "harness", "--version"]
    # The probe gets no credentials at all: it only asks for a version.
    env = child_env(dict.fromkeys(row.settings.unset_env))
    data = bytearray()
    with anyio.move_on_after(VERSION_TIMEOUT_SECONDS):
        try:
            async with open_managed_process(
                argv,
                env=env,
                stdin="devnull",
                stderr="devnull",
                eof_grace_seconds=0.1,
                term_grace_seconds=0.5,
                kill_grace_seconds=1.0,
            ) as process:
                assert process.stdout is not None
                async for chunk in process.stdout:
                    data.extend(chunk)
                    if len(data) >= VERSION_READ_BYTES:
                        break
        except (SpawnError, OSError):
            return None
    match = _VERSION.search(bytes(data[:VERSION_READ_BYTES]))
    return None if match is None else match.group().decode("ascii")


async def check_rows(
    rows: Sequence[AgentRow], endpoint: ResolvedEndpoint | None, workspace: Path
) -> list[AgentRow]:
    """Each found row started once (one at a time), with its status."""
    from .provider_check import check_provider

    checked: list[AgentRow] = []
    for row in rows:
        status: str | None = None
        if row.found and row.lacks_credential:
            status = f"needs {' or '.join(row.settings.credentials)}"
        elif row.found:
            status = await check_provider(row.settings, endpoint, workspace)
        checked.append(_with(row, check=status))
    return checked


def _with(row: AgentRow, **changes: str | None) -> AgentRow:
    from dataclasses import replace

    return replace(row, **changes)


def show_agents(config: HarnessConfig, *, workspace: Path, check: bool, json: bool = False) -> int:
    """Prints the agents table (or NDJSON); exit 0 unless a checked agent failed to start."""
    try:
        endpoint: ResolvedEndpoint | None = resolve_endpoint(config.model)
    except MissingKeyError:
        endpoint = None
    rows = anyio.run(_gather, config, endpoint, workspace, check, backend="asyncio")
    code = EXIT_OK if all(row.ok for row in rows) else EXIT_INCOMPLETE
    if json:
        for row in rows:
            emit(agent_record(row))
        source = str(config.path) if config.path is not None else None
        found = sum(row.found for row in rows)
        emit(
            {
                "type": "summary",
                "config": source,
                "found": found,
                "total": len(rows),
                "exit_code": code,
            }
        )
        return code
    _print_table(rows, check=check)
    return code


async def _gather(
    config: HarnessConfig, endpoint: ResolvedEndpoint | None, workspace: Path, check: bool
) -> list[AgentRow]:
    rows = await probe_versions(agent_rows(config))
    return await check_rows(rows, endpoint, workspace) if check else rows


def _command(row: AgentRow) -> list[str]:
    preset = find_preset(row.settings.preset or "")
    if row.settings.command is None and preset is not None:
        return list(preset.argv)
    return [row.settings.command or row.settings.kind, *row.settings.args]


def agent_record(row: AgentRow) -> dict[str, object]:
    """The `--json` object of one row."""
    return {
        "type": "agent",
        "name": row.settings.name,
        "kind": row.settings.kind,
        "preset": row.settings.preset,
        "configured": row.configured,
        "command": _command(row),
        "installed": row.installed,
        "found": row.found,
        "version": row.version,
        "credentials": list(row.settings.credentials),
        "credentials_set": list(row.credentials_set),
        "credentials_missing": list(row.credentials_missing),
        "needs_credential": row.lacks_credential,
        "install": row.install,
        "check": row.check,
        "ok": row.ok,
    }


def _credentials_cell(row: AgentRow) -> str:
    names = row.settings.credentials
    if not names:
        return "—"
    if row.credentials_set:
        return "set: " + ", ".join(row.credentials_set)
    if row.settings.requires_credential:
        return "missing: " + " or ".join(names)
    return "not set: " + ", ".join(names) + " (or its own login)"


def _found_cell(row: AgentRow) -> str:
    if not row.installed:
        return "not installed"
    if row.settings.remote is not None:
        return "remote"
    if row.settings.ray is not None:
        return "on ray"
    return "found" if row.path is not None else "not found"


def _print_table(rows: Sequence[AgentRow], *, check: bool) -> None:
    import shlex

    table = Table(title="agents", show_lines=True)
    columns = ["agent", "kind", "command", "found", "version", "credentials", "install"]
    for column in [*columns, *(["check"] if check else [])]:
        table.add_column(column, overflow="fold")
    for row in rows:
        cells = [
            escape(row.settings.name + ("" if not row.configured else " (harness.toml)")),
            row.settings.kind,
            escape(shlex.join(_command(row))),
            _found_cell(row),
            row.version or "—",
            _credentials_cell(row),
            escape(row.install or "—") if not row.found else "—",
        ]
        if check:
            cells.append(escape(row.check or "—"))
        table.add_row(*cells)
    output_console().print(table)


def agents_command(*, workspace: Path | None, config: Path | None, check: bool, json: bool) -> int:
    """`harness agents`: the agents of the workspace's config listed (and checked); the code.

    Raises:
        UsageError: the workspace is not accessible, or the config is bad.
    """
    root = workspace_path(workspace)
    return show_agents(load_config(config, workspace=root), workspace=root, check=check, json=json)
