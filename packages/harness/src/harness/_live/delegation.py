"""`harness delegate`: one child through the registry, shown while it works, result apart.

stdout carries the child's output (or, with `--json`, one NDJSON object per event and a final
result object); stop reason, diagnostic and progress go to stderr, never mixed.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
from subagent_core import (
    Budget,
    CancelSignal,
    Cost,
    SessionRequest,
    SubagentError,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentSession,
    SubagentStartError,
)

from harness._config.endpoint import MissingKeyError, ResolvedEndpoint, resolve_endpoint
from harness._config.loading import load_config
from harness._config.paths import sessions_root, workspace_path
from harness._config.settings import (
    FileSystemMode,
    HarnessConfig,
    PermissionAnswer,
    ProviderSettings,
)
from harness._console.exit_codes import EXIT_INCOMPLETE, EXIT_OK, UsageError, signal_exit_code
from harness._console.inputs import read_prompt, read_schema
from harness._console.ndjson import emit, result_record
from harness._console.signals import cancel_on_signals
from harness._console.start_failure import SPAWN_HINTS, spawn_reason
from harness._console.terminal_prompt import terminal_permission
from harness._console.usage import usage_summary
from harness._registry.build import build_registry, require_provider
from harness._registry.child_stderr import child_stderr_logs
from harness._registry.overrides import ApproveChoice, ProviderOverrides

from .delegate_view import JSONView, LiveView, PlainView, RunView
from .kept_sessions import check_name, find_session

EVENTS_DRAIN_SECONDS = 5.0
"""How long the view may take to receive the last events once the run has settled."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DelegateOptions:
    """How `delegate` runs and shows one child."""

    timeout_seconds: float | None = None
    """Cancel the child after this long (the run ends `aborted`, exit 1); None: no limit."""
    json: bool = False
    show_thinking: bool = False
    strict: bool = False
    """A completed run that still carries a diagnostic (a refused permission) exits 1."""
    live: bool = True
    """A live view on a terminal; off while questions are asked there (plain lines instead)."""
    output_schema: dict[str, Any] | None = None
    """`--output-schema`: the JSON Schema the child's answer must validate against."""
    child_stderr: bool = False
    """`--child-stderr`: the child's stderr live on ours too, and its log directory named."""
    session: str | None = None
    """`--session NAME`: continue the kept session of that name, or start it."""
    budget: Budget | None = None
    """`--budget-tokens` / `--budget-usd`: the most the run (or the whole session) may use."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ACPOverrides:
    """Command-line choices that replace an ACP provider's configured ones (None: keep)."""

    permission: PermissionAnswer | None = None
    fs: FileSystemMode | None = None
    terminal: bool | None = None

    @property
    def any(self) -> bool:
        return (self.permission, self.fs, self.terminal) != (None, None, None)

    def apply(self, settings: ProviderSettings) -> ProviderSettings:
        """`settings` with the overrides applied.

        Raises:
            UsageError: overrides for a provider that is not ACP (codex takes `--permission`
                alone), or `ask` without a terminal.
        """
        if not self.any:
            return settings
        if settings.kind != "acp" and (self.fs, self.terminal) != (None, None):
            raise UsageError(
                f'--fs and --terminal apply to ACP providers; "{settings.name}" is {settings.kind}'
            )
        if settings.kind not in ("acp", "claude", "codex"):
            raise UsageError(
                f'--permission applies to ACP, claude and codex providers; "{settings.name}" '
                f"is {settings.kind}"
            )
        permission = self.permission or settings.permission
        if permission == "ask" and not sys.stdin.isatty():
            raise UsageError("--permission ask needs a terminal on stdin to ask at")
        changes: dict[str, Any] = {}
        if self.permission is not None:
            ask = self.permission == "ask"
            changes["permission"] = terminal_permission() if ask else self.permission
        if self.fs is not None:
            changes["fs"] = self.fs
        if self.terminal is not None:
            changes["terminal"] = self.terminal
        return replace(settings, config=replace(settings.config, **changes))


def delegate_command(
    *,
    prompt: str,
    provider: str,
    workspace: Path | None,
    config: Path | None,
    model: str | None,
    base_url: str | None,
    timeout_seconds: float | None,
    json: bool,
    show_thinking: bool,
    strict: bool,
    output_schema: Path | None,
    child_stderr: bool,
    session: str | None,
    budget_tokens: int | None,
    budget_usd: float | None,
    acp: ACPOverrides,
    approve: ApproveChoice | None,
    startup_timeout_seconds: float | None,
    idle_timeout_seconds: float | None,
) -> int:
    """`harness delegate`: the command's options read (the prompt, `-` for stdin; the schema
    file; the config of the workspace, a kept session's own by default), then `delegate_once`.

    Raises:
        UsageError: a bad option value, workspace or config, or what `delegate_once` raises.
    """
    name = None if session is None else check_name(session)
    if name is not None and workspace is None:
        # A kept session continues where it ran (a fan-out child's worktree, say).
        kept = find_session(sessions_root(), name)
        if kept is not None and kept.cwd is not None:
            workspace = Path(kept.cwd)
    root = workspace_path(workspace)
    settings = load_config(config, workspace=root)
    return delegate_once(
        settings,
        provider,
        read_prompt(prompt),
        workspace=root,
        base_url=base_url,
        model=model,
        options=DelegateOptions(
            timeout_seconds=timeout_seconds,
            json=json,
            show_thinking=show_thinking,
            strict=strict,
            output_schema=None if output_schema is None else read_schema(output_schema),
            child_stderr=child_stderr,
            session=name,
            budget=None
            if budget_tokens is None and budget_usd is None
            else Budget(
                max_tokens=budget_tokens,
                max_cost=None if budget_usd is None else Cost(budget_usd, "USD"),
            ),
        ),
        acp=acp,
        overrides=ProviderOverrides(
            approve=approve,
            startup_timeout_seconds=startup_timeout_seconds,
            idle_timeout_seconds=idle_timeout_seconds,
        ),
    )


def delegate_once(
    config: HarnessConfig,
    provider: str,
    prompt: str,
    *,
    workspace: Path,
    base_url: str | None = None,
    model: str | None = None,
    options: DelegateOptions | None = None,
    acp: ACPOverrides | None = None,
    overrides: ProviderOverrides | None = None,
) -> int:
    """Runs one child and returns the exit code (0 completed, 1 otherwise, 130 interrupted).

    Raises:
        UsageError: unknown provider, bad provider configuration, or a missing key.
    """
    try:
        endpoint: ResolvedEndpoint | None = resolve_endpoint(
            config.model, base_url=base_url, model=model
        )
    except MissingKeyError:
        endpoint = None
    chosen = require_provider(config, endpoint, provider)
    acp = acp or ACPOverrides()
    overrides = overrides or ProviderOverrides()
    if acp.permission is not None and overrides.approve is not None:
        raise UsageError("--permission and --approve both set the permission: give one")
    chosen = acp.apply(chosen)
    options = options or DelegateOptions()
    if chosen.permission == "ask" and chosen.kind in ("acp", "claude", "codex"):
        options = replace(options, live=False)
    if options.child_stderr:
        options = replace(options, live=False)  # raw child lines would tear a live view
    logs = child_stderr_logs(live=options.child_stderr)
    try:
        registry = build_registry(
            [chosen],
            endpoint=endpoint,
            workspace=workspace,
            overrides=overrides,
            child_stderr=logs,
        )
    except ValueError as error:
        raise UsageError(f"providers.{provider}: {error}") from None
    code = anyio.run(
        _delegate,
        registry,
        provider,
        prompt,
        workspace,
        options,
        backend="asyncio",
    )
    location = logs.location()
    if location is not None:
        _err(location)
    return code


async def _delegate(
    registry: SubagentRegistry,
    provider: str,
    prompt: str,
    workspace: Path,
    options: DelegateOptions,
) -> int:
    cancel = CancelSignal()
    # The person running `delegate` is the parent: writes through the client file system are
    # theirs to allow (`fs = "read-write"` offers them, `permission` gates each one).
    request = SubagentRequest(
        prompt=prompt,
        cwd=workspace,
        cancel=cancel,
        label="delegate",
        output_schema=options.output_schema,
        allow_writes=True,
        budget=options.budget,
    )
    start_refused: str | None = None
    result, timed_out = SubagentResult(stop_reason="aborted"), False
    teardown: str | None = None
    session: SubagentSession | None = None
    # Closing the registry closes its providers, so no warm child outlives the command.
    async with registry, cancel_on_signals(cancel) as received:
        try:
            if options.session is None:
                run = await registry.start(provider, request)
            else:
                session, run = await _session_turn(registry, provider, request, options.session)
        except SubagentStartError as error:
            reason = spawn_reason(error)
            code = signal_exit_code(received) or EXIT_INCOMPLETE
            _report_start_failure(provider, str(error), reason, code, options)
            return code
        except SubagentError as error:
            # Raised once out of the signal watcher's task group (it would wrap the error).
            start_refused = str(error)
        else:
            async with run:
                result, timed_out = await _watch(run, cancel, options)
                teardown = await run.dispose()
            if session is not None:
                teardown = await session.aclose() or teardown
    if start_refused is not None:
        raise UsageError(start_refused)
    code = signal_exit_code(received)
    if code is None:
        completed = result.stop_reason == "completed"
        refused = options.strict and result.diagnostic is not None
        code = EXIT_OK if completed and not refused else EXIT_INCOMPLETE
    if options.json:
        record = result_record(
            provider, result, teardown=teardown, exit_code=code, timed_out=timed_out
        )
        if session is not None and options.session is not None:
            record["session"] = {"name": options.session, "turn": session.turns}
        emit(record)
    else:
        print_result(result, teardown)
        if timed_out:
            _err(f"harness: timed out after {options.timeout_seconds:g} s; the child was stopped")
    return code


async def _session_turn(
    registry: SubagentRegistry, provider: str, request: SubagentRequest, name: str
) -> tuple[SubagentSession, SubagentRun]:
    """Continues the kept session `name` (a cold resume: this process is new) or starts it,
    and begins this call's turn; says which on stderr (`session NAME: turn N`).

    Raises:
        SubagentError: the session belongs to another agent, or the provider has no sessions.
        SubagentStartError: the child could not start or resume.
    """
    root = sessions_root()
    kept = find_session(root, name)
    session_request = SessionRequest(
        cwd=request.cwd,
        cancel=request.cancel,
        label=name,
        allow_writes=request.allow_writes,
        budget=request.budget,
        state_dir=root,
    )
    if kept is None:
        session = await registry.open_session(provider, session_request)
    elif kept.provider != provider:
        raise SubagentError(
            "SESSION_AGENT", f'session {name} belongs to agent "{kept.provider}", not "{provider}"'
        )
    else:
        session = await registry.resume_session(provider, kept.handle, session_request)
    try:
        run = await session.run(
            request.prompt, cancel=request.cancel, output_schema=request.output_schema
        )
    except BaseException:
        with anyio.CancelScope(shield=True):
            await session.aclose()
        raise
    _err(f"session {name}: turn {session.turns}")
    return session, run


async def _watch(
    run: SubagentRun, cancel: CancelSignal, options: DelegateOptions
) -> tuple[SubagentResult, bool]:
    """Shows the run's events while waiting for its result; cancels it at the timeout."""
    view = _view(options)
    timed_out = False
    deadline_scope = anyio.CancelScope()
    result = SubagentResult(stop_reason="aborted")
    try:
        async with anyio.create_task_group() as tg:

            async def show_events() -> None:
                async for event in run.events():
                    view.show(event)

            async def deadline(seconds: float) -> None:
                nonlocal timed_out
                with deadline_scope:
                    await anyio.sleep(seconds)
                    timed_out = True
                    cancel.cancel()

            tg.start_soon(show_events)
            if options.timeout_seconds is not None:
                tg.start_soon(deadline, options.timeout_seconds)
            result = await run.result()
            deadline_scope.cancel()
            tg.cancel_scope.deadline = anyio.current_time() + EVENTS_DRAIN_SECONDS
    finally:
        view.close()
    return result, timed_out


def _view(options: DelegateOptions) -> RunView:
    if options.json:
        return JSONView()
    if options.live and sys.stderr.isatty():
        return LiveView(show_thinking=options.show_thinking)
    return PlainView(show_thinking=options.show_thinking)


def _report_start_failure(
    provider: str, diagnostic: str, reason: str | None, code: int, options: DelegateOptions
) -> None:
    if options.json:
        emit(
            result_record(
                provider,
                SubagentResult(stop_reason="error", diagnostic=diagnostic),
                teardown=None,
                exit_code=code,
                start_failure=reason,
            )
        )
        return
    _err("stop reason: error")
    _err(f"diagnostic: {diagnostic}")
    _next_step(diagnostic)
    hint = SPAWN_HINTS.get(reason or "")
    _err(
        f"harness: the child could not start: {hint}"
        if hint
        else "harness: the child could not start"
    )


def print_result(result: SubagentResult, teardown: str | None) -> None:
    """The output on stdout (structured output as indented JSON); stop reason, usage and
    diagnostics on stderr (never mixed)."""
    output = result.output
    if result.structured_output is not None:
        output = json.dumps(result.structured_output, ensure_ascii=False, indent=2)
    if output:
        sys.stdout.write(output)
        if not output.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.flush()
    usage = usage_summary(result.usage)
    if usage is not None:
        _err(usage)
    _err(f"stop reason: {result.stop_reason}")
    if result.diagnostic is not None:
        _err(f"diagnostic: {result.diagnostic}")
        _next_step(result.diagnostic)
    if teardown is not None:
        _err(f"teardown: {teardown}")


AUTHENTICATION_HINT = "harness: log the agent in or pass its key in the provider's env"
"""The next step under a diagnostic whose category is `authentication` (a human line of ours,
never part of the diagnostic itself)."""


def _next_step(diagnostic: str) -> None:
    """One human line saying what to do, for the categories that have an obvious next step."""
    if "category: authentication" in diagnostic:
        _err(AUTHENTICATION_HINT)


def _err(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
