"""Building blocks of the scenario bodies: this harness as a child, one run, side-effect checks.

Imports the provider packages; loaded only to run scenarios (and by the soak test).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

import anyio
import psutil
from subagent_core import (
    CancelSignal,
    SubagentProvider,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
)

from harness._config.provider_tables import provider_from_table
from harness._registry.build import HARNESS_ARGV, build_provider, with_graces

from .scenario import ScenarioContext

_STDERR_TO_FILE = 'log="$1"; shift; exec "$@" 2>"$log"'
"""`sh -c` script: run the rest of the arguments with stderr sent to the file in `$1`."""


def self_provider(
    context: ScenarioContext,
    kind: Literal["acp", "sdk"],
    name: str,
    subcommand: str,
    *args: str,
    permission: Literal["allow", "reject"] = "reject",
    env: dict[str, str] | None = None,
    stderr_to: Path | None = None,
) -> SubagentProvider:
    """`harness SUBCOMMAND ARGS` as an ACP or SDK child, with the scenario's short graces.

    `stderr_to` sends the child's stderr to that file (through `sh`, which `exec`s the child),
    so a scenario can show what the child wrote there and that none of it reached the result.
    """
    argv = [*HARNESS_ARGV, subcommand, *args]
    if stderr_to is not None:
        argv = ["/bin/sh", "-c", _STDERR_TO_FILE, "sh", str(stderr_to), *argv]
    command, *rest = argv
    table: dict[str, object] = {"kind": kind, "command": command, "args": rest, "env": env or {}}
    if kind == "acp":
        table["permission"] = permission  # the SDK wire has no permission requests
    settings = provider_from_table(name, table)
    return build_provider(
        with_graces(settings, *context.graces), endpoint=None, workspace=context.workspace
    )


def acp_agent_provider(
    context: ScenarioContext,
    *,
    permission: Literal["allow", "reject"] = "reject",
    extra_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    base_url: str | None = None,
) -> SubagentProvider:
    """`harness acp-agent` as the ACP child `acp`, backed by the scenario's model endpoint.

    Its sessions go to the scenario's state dir, never the user's.
    """
    return _model_child(
        context, "acp", "acp", "acp-agent", base_url, extra_args, env, permission=permission
    )


def sdk_runtime_provider(
    context: ScenarioContext,
    *,
    extra_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    base_url: str | None = None,
) -> SubagentProvider:
    """`harness sdk-runtime` as the SDK child `dsh-sdk`, backed by the scenario's model.

    Its sessions go to the scenario's state dir, never the user's.
    """
    return _model_child(context, "sdk", "dsh-sdk", "sdk-runtime", base_url, extra_args, env)


def _model_child(
    context: ScenarioContext,
    kind: Literal["acp", "sdk"],
    name: str,
    subcommand: str,
    base_url: str | None,
    extra_args: tuple[str, ...],
    env: dict[str, str] | None,
    *,
    permission: Literal["allow", "reject"] = "reject",
) -> SubagentProvider:
    """A harness agent subcommand on the scenario's model endpoint and state dir."""
    return self_provider(
        context,
        kind,
        name,
        subcommand,
        "--base-url",
        base_url or context.base_url,
        "--state-dir",
        str(context.state_dir),
        *extra_args,
        permission=permission,
        env=env,
    )


def claude_fake_provider(context: ScenarioContext, script: dict[str, object]) -> SubagentProvider:
    """The fake Claude Code CLI (`python -m subagent_claude.testing`) as the native child
    `claude-fake`, with the scenario's short graces."""
    from subagent_claude.testing import fake_claude_argv, script_env

    command, *args = fake_claude_argv()
    settings = provider_from_table(
        "claude-fake",
        {"kind": "claude", "command": command, "args": args, "env": script_env(script)},
    )
    return build_provider(
        with_graces(settings, *context.graces), endpoint=None, workspace=context.workspace
    )


async def run_child(
    provider: SubagentProvider,
    prompt: str,
    context: ScenarioContext,
    *,
    cancel_when: Callable[[], Awaitable[None]] | None = None,
) -> SubagentResult:
    """One run through a registry; a start error becomes an `error` row with its diagnostic.

    `cancel_when`, if given, is awaited after start; when it returns the run is cancelled.
    The run is disposed (its process tree confirmed gone) and the provider closed before this
    returns.
    """
    cancel = CancelSignal()
    request = SubagentRequest(prompt=prompt, cwd=context.workspace, cancel=cancel)
    # Closing the registry closes the provider too (a pool of warm children, if it has one).
    async with SubagentRegistry() as registry:
        registry.register(provider)
        try:
            run = await registry.start(provider.name, request)
        except SubagentStartError as error:
            return SubagentResult(stop_reason="error", diagnostic=str(error))
        async with run:
            if cancel_when is None:
                return await run.result()
            result: SubagentResult | None = None
            async with anyio.create_task_group() as tg:

                async def trigger() -> None:
                    await cancel_when()
                    cancel.cancel()

                tg.start_soon(trigger)
                result = await run.result()
                tg.cancel_scope.cancel()
            assert result is not None
            return result


async def wait_for_file(path: Path) -> None:
    """Returns once `path` exists and is not empty (a marker a child writes; caller bounds it)."""
    apath = anyio.Path(path)
    # Another process creates the file: there is no in-process event to wait on.
    while not (await apath.exists() and (await apath.stat()).st_size > 0):  # noqa: ASYNC110
        await anyio.sleep(0.02)


def leaked_text(secret: str, result: SubagentResult) -> str | None:
    """A mismatch when `secret` shows in the result (output or diagnostic), else None."""
    if secret in result.output or secret in (result.diagnostic or ""):
        return "the child's secret reached the result"
    return None


def process_left(marker: Path) -> str | None:
    """A mismatch when the process whose pid `marker` holds still runs (zombies are gone)."""
    try:
        pid = int(marker.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return "the command never wrote its pid"
    try:
        if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            return f"the child's command (pid {pid}) is still running"
    except psutil.NoSuchProcess:
        pass
    return None
