"""`harness fanout` (`run`): the same prompt on several agents (configured or presets), then one
table, best first.

The command resolves the agents as `delegate` resolves one provider, builds one registry for
them, and hands the rest to `harness.fanout.run_fanout` (with `--verify`, `--protect` and
`--verify-timeout` as they are); Ctrl-C and SIGTERM cancel every child through the request's
cancel signal (so each is disposed and every worktree removed before the exit code, 130 or
143, is returned). `--report FILE.html` writes the run's page from its record at the end.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

import anyio
from subagent_core import CancelSignal, SubagentRegistry, SubagentRequest

from harness._config.endpoint import MissingKeyError, ResolvedEndpoint, resolve_endpoint
from harness._config.loading import load_config
from harness._config.paths import sessions_root, workspace_path
from harness._config.settings import HarnessConfig, ProviderSettings
from harness._console.consoles import output_console
from harness._console.exit_codes import EXIT_INCOMPLETE, EXIT_OK, UsageError, signal_exit_code
from harness._console.inputs import read_prompt
from harness._console.ndjson import emit
from harness._console.signals import cancel_on_signals
from harness._registry.build import build_registry, require_provider
from harness._registry.child_stderr import child_stderr_logs

from ._git import IsolationError
from ._isolation import IsolationMode
from ._verify import DEFAULT_VERIFY_TIMEOUT_SECONDS


@dataclass(frozen=True, slots=True, kw_only=True)
class FanoutOptions:
    """How `fanout` runs and shows its children."""

    isolation: IsolationMode = "worktree"
    keep: bool = False
    concurrency: int | None = None
    timeout_seconds: float | None = None
    """Each child's deadline (it then ends `aborted`, shown as timed out)."""
    patch_dir: Path | None = None
    json: bool = False
    live: bool = True
    child_stderr: bool = False
    """`--child-stderr`: each child's stderr live on ours too, and the log directory named."""
    verify: str | None = None
    """`--verify CMD`: the user's check, run in each child's place once it settled."""
    protect: tuple[str, ...] = ()
    """`--protect GLOB`s, added to the default protected files."""
    verify_timeout_seconds: float = DEFAULT_VERIFY_TIMEOUT_SECONDS
    report: Path | None = None
    """`--report FILE.html`: the run's page, written when it ends."""


def fanout_command(
    *,
    prompt: str,
    agents: list[str],
    isolation: IsolationMode,
    yes: bool,
    keep: bool,
    concurrency: int | None,
    timeout_seconds: float | None,
    patch_dir: Path | None,
    workspace: Path | None,
    config: Path | None,
    model: str | None,
    base_url: str | None,
    json: bool,
    child_stderr: bool,
    verify: str | None = None,
    protect: tuple[str, ...] = (),
    verify_timeout_seconds: float = DEFAULT_VERIFY_TIMEOUT_SECONDS,
    report: Path | None = None,
) -> int:
    """`harness fanout`: `--isolation none` only with `--yes` (and never with `--verify`); the
    workspace's config and the prompt (`-`: stdin) read; then `fanout_once`.

    Raises:
        UsageError: `none` without `--yes`, `--verify` with `none` or empty, a bad workspace or
            config, an empty prompt, or what `fanout_once` raises.
    """
    if isolation == "none" and not yes:
        raise UsageError(
            "--isolation none runs every child in the same files; pass --yes to accept that"
        )
    if verify is not None and isolation == "none":
        raise UsageError("--verify needs each child in its own place: not with --isolation none")
    if verify is not None and not verify.strip():
        raise UsageError("--verify needs a command")
    root = workspace_path(workspace)
    settings = load_config(config, workspace=root)
    return fanout_once(
        settings,
        agents,
        read_prompt(prompt),
        workspace=root,
        base_url=base_url,
        model=model,
        options=FanoutOptions(
            isolation=isolation,
            keep=keep,
            concurrency=concurrency,
            timeout_seconds=timeout_seconds,
            patch_dir=None if patch_dir is None else patch_dir.resolve(),
            json=json,
            child_stderr=child_stderr,
            verify=verify,
            protect=protect,
            verify_timeout_seconds=verify_timeout_seconds,
            report=None if report is None else report.absolute(),
        ),
    )


def fanout_once(
    config: HarnessConfig,
    agents: list[str],
    prompt: str,
    *,
    workspace: Path,
    base_url: str | None = None,
    model: str | None = None,
    options: FanoutOptions | None = None,
) -> int:
    """Runs the fan-out and returns the exit code (0 when at least one child completed).

    Raises:
        UsageError: an unknown agent, a provider with its own `cwd`, a missing key, `worktree`
            outside a git repository, or an isolation git could not set up.
    """
    options = options or FanoutOptions()
    try:
        endpoint: ResolvedEndpoint | None = resolve_endpoint(
            config.model, base_url=base_url, model=model
        )
    except MissingKeyError:
        endpoint = None
    chosen: list[ProviderSettings] = []
    for name in dict.fromkeys(agents):
        settings = require_provider(config, endpoint, name)  # as `delegate -a` resolves it
        if settings.cwd is not None and options.isolation != "none":
            raise UsageError(
                f"providers.{name}.cwd is set, so its child would not work in its own "
                "worktree or copy; remove it or use --isolation none --yes"
            )
        chosen.append(settings)
    if any(item.kind == "acp" and item.permission == "ask" for item in chosen):
        options = replace(options, live=False)  # questions are asked on the terminal
    if options.child_stderr:
        options = replace(options, live=False)  # raw child lines would tear the live rows
    logs = child_stderr_logs(live=options.child_stderr)
    try:
        registry = build_registry(chosen, endpoint=endpoint, workspace=workspace, child_stderr=logs)
    except ValueError as error:
        raise UsageError(str(error)) from None
    code = anyio.run(_fanout, registry, agents, prompt, workspace, options, backend="asyncio")
    location = logs.location()
    if location is not None:
        _err(location)
    return code


async def _fanout(
    registry: SubagentRegistry,
    agents: list[str],
    prompt: str,
    workspace: Path,
    options: FanoutOptions,
) -> int:
    from ._result import FanoutResult
    from ._run import run_fanout
    from ._view import LiveRows, PlainRows, child_record, summary_table

    cancel = CancelSignal()
    request = SubagentRequest(prompt=prompt, cwd=workspace, cancel=cancel, label="fanout")
    outcomes: list[FanoutResult] = []
    failure: IsolationError | None = None
    # Nothing raises inside the signal watcher's task group: an error there would come out
    # wrapped in an exception group instead of as the one line it is.
    async with registry, cancel_on_signals(cancel) as received:
        view: LiveRows | PlainRows | None = None
        if not options.json:
            view = LiveRows(agents) if options.live and sys.stderr.isatty() else PlainRows()
        try:
            outcomes = await run_fanout(
                registry,
                agents,
                request,
                isolation=options.isolation,
                keep=options.keep,
                concurrency=options.concurrency,
                timeout_seconds=options.timeout_seconds,
                patch_dir=options.patch_dir,
                observer=view,
                sessions=sessions_root() if options.keep else None,
                verify=options.verify,
                protect=options.protect,
                verify_timeout_seconds=options.verify_timeout_seconds,
            )
        except IsolationError as error:
            failure = error
        finally:
            if view is not None:
                view.close()
    if failure is not None:
        raise UsageError(str(failure))
    code = signal_exit_code(received)
    if code is None:
        completed = any(item.result.stop_reason == "completed" for item in outcomes)
        code = EXIT_OK if completed else EXIT_INCOMPLETE
    run_id = outcomes[0].run_id if outcomes else None
    report = await _write_report(run_id, options.report) if run_id is not None else None
    if options.json:
        for outcome in outcomes:
            emit(child_record(outcome, kept=options.keep))
        emit(
            {
                "type": "summary",
                "run": run_id,
                "isolation": options.isolation,
                "kept": options.keep,
                "completed": sum(item.result.stop_reason == "completed" for item in outcomes),
                "passed": sum(
                    item.verify is not None and item.verify.status == "pass" for item in outcomes
                ),
                "total": len(outcomes),
                "report": None if report is None else str(report),
                "exit_code": code,
            }
        )
        return code
    console = output_console()
    title = f"harness fanout ({options.isolation})"
    if run_id is not None:
        title += f", run {run_id}"
    console.print(summary_table(outcomes, title=title, verify=options.verify is not None))
    for outcome in outcomes:
        if outcome.patch is not None:
            console.print(
                f"#{outcome.number} {outcome.agent}: patch {outcome.patch}", soft_wrap=True
            )
        if options.keep and options.isolation != "none" and outcome.isolation_path is not None:
            where = f"#{outcome.number} {outcome.agent}: kept {outcome.isolation_path}"
            if outcome.branch is not None:
                where += f" (branch {outcome.branch})"
            if outcome.session is not None:
                where += f"; continue it with --session {outcome.session}"
            console.print(where, soft_wrap=True)
    best = next((outcome for outcome in outcomes if outcome.rank == 1), None)
    if best is not None and best.patch is not None and not received:
        console.print(
            f"best: #{best.number} {best.agent}; take its patch with "
            f"harness fanout apply {best.run_id} {best.number}",
            soft_wrap=True,
        )
    if report is not None:
        console.print(f"report: {report}", soft_wrap=True)
    if received:
        removed = "" if options.keep else " and its place removed"
        _err(f"harness: cancelled by signal; every child was stopped{removed}")
    return code


async def _write_report(run_id: str, path: Path | None) -> Path | None:
    """The run's page, from its record: to `path`, or None when no report was asked for."""
    if path is None:
        return None
    from harness._config.paths import fanout_run_dir

    from ._record import RecordError, read_record
    from ._report import write_report

    def write() -> Path | None:
        try:
            return write_report(read_record(fanout_run_dir(run_id)), path)
        except (OSError, RecordError):
            _err(f"harness: the report could not be written to {path}")
            return None

    with anyio.CancelScope(shield=True):
        return await anyio.to_thread.run_sync(write)


def _err(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
