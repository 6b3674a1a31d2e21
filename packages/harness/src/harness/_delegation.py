"""`harness delegate`: one child through the registry; output and diagnostic printed apart."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from subagent_core import (
    CancelSignal,
    SubagentError,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
)

from ._config import HarnessConfig
from ._endpoint import MissingKeyError, ResolvedEndpoint, resolve_endpoint
from ._exit import EXIT_INCOMPLETE, EXIT_OK, UsageError
from ._providers import build_registry, provider_settings
from ._signals import cancel_on_signals


def delegate_once(
    config: HarnessConfig,
    provider: str,
    prompt: str,
    *,
    workspace: Path,
    base_url: str | None = None,
    model: str | None = None,
) -> int:
    """Runs one child and returns the exit code (0 completed, 1 otherwise).

    Raises:
        UsageError: unknown provider, bad provider configuration, or a missing key.
    """
    try:
        endpoint: ResolvedEndpoint | None = resolve_endpoint(
            config.model, base_url=base_url, model=model
        )
    except MissingKeyError:
        endpoint = None
    settings = provider_settings(config, endpoint)
    chosen = next((item for item in settings if item.name == provider), None)
    if chosen is None:
        names = ", ".join(item.name for item in settings)
        raise UsageError(f'no provider named "{provider}" (configured: {names})')
    if endpoint is None and (not config.providers or chosen.kind == "model"):
        raise MissingKeyError
    try:
        registry = build_registry([chosen], endpoint=endpoint, workspace=workspace)
    except ValueError as error:
        raise UsageError(f"providers.{provider}: {error}") from None
    return anyio.run(_delegate, registry, provider, prompt, workspace, backend="asyncio")


async def _delegate(registry: SubagentRegistry, provider: str, prompt: str, workspace: Path) -> int:
    cancel = CancelSignal()
    request = SubagentRequest(prompt=prompt, cwd=workspace, cancel=cancel, label="delegate")
    async with cancel_on_signals(cancel):
        try:
            run = await registry.start(provider, request)
        except SubagentStartError as error:
            _err(f"the child could not start: {error}")
            return EXIT_INCOMPLETE
        except SubagentError as error:
            raise UsageError(str(error)) from None
        async with run:
            result = await run.result()
            teardown = await run.dispose()
    print_result(result, teardown)
    return EXIT_OK if result.stop_reason == "completed" else EXIT_INCOMPLETE


def print_result(result: SubagentResult, teardown: str | None) -> None:
    """The output on stdout; stop reason and diagnostics on stderr (never mixed)."""
    if result.output:
        sys.stdout.write(result.output)
        if not result.output.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.flush()
    _err(f"stop reason: {result.stop_reason}")
    if result.diagnostic is not None:
        _err(f"diagnostic: {result.diagnostic}")
    if teardown is not None:
        _err(f"teardown: {teardown}")


def _err(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
