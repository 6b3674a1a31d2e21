"""Fan-out: the same task on several agents at once, each in its own place, compared after.

    run_fanout(registry, agents, request)
      open_isolation(...)                      worktrees / copies, removed on leaving
        the start point and the run's record (its folder under the state directory)
        one task per child, at most `concurrency` at once:
          prepare its place → hash its protected files (with `verify`) → start it there
          (cwd = the place) → watch it (deadline) → dispose it → read its changes as a patch
          → run `verify` in its place → FanoutResult
        every child ranked; the record written again, whole
      → one FanoutResult per agent, in the order asked

A child is started through the registry exactly as one delegation is: the provider's own
containment, teardown graces and permission policy apply unchanged; only the request's cwd
(the child's place) and its cancel signal (a child of the request's, so cancelling the request
cancels every child, and a deadline cancels one) differ. A child's failure is its result, never
an exception; only misuse and an isolation that cannot be set up raise.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from subagent_core import (
    CancelSignal,
    SessionRequest,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentSession,
    SubagentStartError,
)
from subagent_core.kit import workflow_span

from harness._config.paths import fanout_run_dir, fanout_runs_root
from harness._console.start_failure import spawn_reason

from ._git import IsolationError
from ._isolation import (
    ISOLATION_MODES,
    Isolation,
    IsolationMode,
    Place,
    branch_label,
    changes,
    open_isolation,
)
from ._record import RunRecord, now_iso, write_record
from ._result import FanoutObserver, FanoutResult, VerifyObserver, ranked
from ._verify import DEFAULT_VERIFY_TIMEOUT_SECONDS, Verifier, VerifyOutcome

EVENTS_DRAIN_SECONDS = 5.0
"""How long an observer may take to receive a child's last events once it has settled."""


def default_patch_dir(run_id: str) -> Path:
    """Where patches go by default: `fanout/<run>` under the harness state directory.

    `HARNESS_STATE_DIR` when set, else the user's XDG state directory; the patches outlive the
    worktrees, which is why they are not kept in the temporary directory.
    """
    return fanout_run_dir(run_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Context:
    """What every child of one fan-out shares."""

    registry: SubagentRegistry
    request: SubagentRequest
    places: Isolation
    patches: Path
    timeout_seconds: float | None
    observer: FanoutObserver | None
    sessions: Path | None
    verifier: Verifier | None


async def run_fanout(
    registry: SubagentRegistry,
    agents: Sequence[str],
    request: SubagentRequest,
    *,
    isolation: IsolationMode = "worktree",
    keep: bool = False,
    concurrency: int | None = None,
    timeout_seconds: float | None = None,
    patch_dir: Path | None = None,
    observer: FanoutObserver | None = None,
    sessions: Path | None = None,
    verify: str | None = None,
    protect: Sequence[str] = (),
    verify_timeout_seconds: float = DEFAULT_VERIFY_TIMEOUT_SECONDS,
    runs_dir: Path | None = None,
) -> list[FanoutResult]:
    """Runs `request` on every agent in `agents` at once, each in its own place.

    `request.cwd` (default: the current directory) is the workspace copied or checked out for
    each child; `request.cancel` cancels every child. `concurrency` bounds how many children
    run at once (default: all); `timeout_seconds` is each child's deadline (it then ends
    `aborted` with `timed_out`). The run's folder is `<runs_dir>/<run>` (default: `fanout/`
    under the state directory): its record (`harness fanout list`, `apply`, `report` read it),
    the verify logs, and the patches unless `patch_dir` is given.

    `verify` is a shell command run in each child's place once it settled (its own process
    tree, at most `verify_timeout_seconds`); the files matching `protect` (GLOBs added to the
    default test configuration files) and the files the command names are hashed before and
    after the child: a child that changed one is `tampered`. Every result carries its `rank`.

    Every worktree, `fanout/` branch and temporary directory is removed before this returns
    or raises, unless `keep`. With `keep` and a `sessions` folder, each child whose provider
    can resume runs as a session kept there under the name `fanout-<run>-<agent>`, so it can
    be continued in its worktree (`harness delegate --session fanout-<run>-<agent>`).

    Raises:
        ValueError: no agents, an agent the registry does not have, `concurrency` < 1, an
            empty verify command, a verify timeout ≤ 0, or `verify` with isolation `none`.
        NotAGitRepositoryError: `worktree` isolation outside a git repository.
        IsolationError: a worktree or copy could not be made (fixed text).
    """
    if not agents:
        raise ValueError("a fan-out needs at least one agent")
    unknown = sorted(set(agents) - set(registry.names()))
    if unknown:
        raise ValueError(f"no provider named {', '.join(repr(name) for name in unknown)}")
    if concurrency is not None and concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if isolation not in ISOLATION_MODES:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_MODES)}")
    if verify is not None and isolation == "none":
        raise ValueError("verify needs each child in its own place, not isolation none")
    workspace = Path(await anyio.Path(request.cwd or os.getcwd()).resolve())
    limiter = anyio.CapacityLimiter(concurrency or len(agents))
    outcomes: dict[int, FanoutResult] = {}
    async with open_isolation(isolation, workspace, keep=keep) as places:
        folder = (runs_dir or fanout_runs_root()) / places.run_id
        verifier = None
        if verify is not None:
            verifier = Verifier(
                verify, protect=protect, timeout_seconds=verify_timeout_seconds, log_dir=folder
            )
        base = await places.start_point()
        record = RunRecord(
            run=places.run_id,
            folder=folder,
            started_at=now_iso(),
            workspace=str(workspace),
            isolation=isolation,
            agents=tuple(agents),
            repository=None if places.repository is None else str(places.repository),
            base=base,
            head=places.head,
            verify=verify,
            verify_timeout_seconds=verify_timeout_seconds if verify is not None else None,
            protect=tuple(protect),
        )
        await anyio.to_thread.run_sync(write_record, record)
        context = _Context(
            registry=registry,
            request=request,
            places=places,
            patches=patch_dir or folder,
            timeout_seconds=timeout_seconds,
            observer=observer,
            sessions=sessions if keep else None,
            verifier=verifier,
        )

        async def one(number: int, agent: str) -> None:
            async with limiter:
                outcome = await _run_child(context, agent, number)
            outcomes[number] = outcome
            if observer is not None:
                observer.finished(outcome)

        try:
            # One workflow span over the children's runs (each of theirs is its child).
            with workflow_span("fanout"):
                async with anyio.create_task_group() as tg:
                    for number, agent in enumerate(agents, start=1):
                        tg.start_soon(one, number, agent)
        except BaseExceptionGroup as group:
            # A place git could not make ends the fan-out: as itself, not wrapped in a group.
            first = _only_isolation_error(group)
            if first is None:
                raise
            raise first from None
        results = ranked([outcomes[number] for number in sorted(outcomes)])
        finished = dataclasses.replace(record, finished_at=now_iso(), children=tuple(results))
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(write_record, finished)
    return results


async def _run_child(context: _Context, agent: str, number: int) -> FanoutResult:
    request, places, observer = context.request, context.places, context.observer
    run_id = places.run_id
    if request.cancel.cancelled:
        return FanoutResult(
            number=number,
            agent=agent,
            result=SubagentResult(stop_reason="aborted"),
            wall_seconds=0.0,
            run_id=run_id,
        )
    place = await places.prepare(number, agent)
    if request.cancel.cancelled:
        # Cancelled while its place was being made: nothing to start.
        return FanoutResult(
            number=number,
            agent=agent,
            result=SubagentResult(stop_reason="aborted"),
            wall_seconds=0.0,
            isolation_path=place.root,
            branch=place.branch,
            run_id=run_id,
        )
    protected = None if context.verifier is None else await context.verifier.before(place)
    cancel = request.cancel.child()
    label = f"{request.label or 'fanout'} #{number}"
    child_request = dataclasses.replace(request, cwd=place.cwd, cancel=cancel, label=label)
    if observer is not None:
        observer.started(number, agent)
    started = anyio.current_time()
    timed_out = False
    teardown: str | None = None
    start_failure: str | None = None
    session: SubagentSession | None = None
    session_name: str | None = None
    registry = context.registry
    try:
        if context.sessions is not None and _resumable(registry, agent):
            session_name = f"fanout-{run_id}-{agent}"
            session, run = await _session_turn(
                registry, agent, child_request, session_name, context.sessions
            )
        else:
            run = await registry.start(agent, child_request)
    except SubagentStartError as error:
        session_name = None
        if cancel.cancelled:
            # The fan-out was cancelled as this child was being started: a cancel, not a fault.
            result = SubagentResult(stop_reason="aborted")
        else:
            result = SubagentResult(stop_reason="error", diagnostic=str(error))
            start_failure = spawn_reason(error)
    else:
        async with run:
            result, timed_out = await _watch(run, number, cancel, context.timeout_seconds, observer)
            teardown = await run.dispose()
        if session is not None:
            teardown = await session.aclose() or teardown
    wall = anyio.current_time() - started
    name = f"{number}-{branch_label(agent)}"
    patch = await _patch_path(context.patches, name, place)
    changes_error: str | None = None
    try:
        files = await changes(place, patch)
    except IsolationError as error:
        # The child can break its own place (delete files git needs): that is its outcome.
        files, changes_error = (), str(error)
    verified: VerifyOutcome | None = None
    if context.verifier is not None and protected is not None and start_failure is None:
        if isinstance(observer, VerifyObserver):
            observer.verifying(number)
        verified = await context.verifier.check(
            place, protected, f"{name}.verify.log", request.cancel
        )
    return FanoutResult(
        number=number,
        agent=agent,
        result=result,
        wall_seconds=wall,
        files=files,
        patch=patch if files and patch is not None else None,
        isolation_path=place.root,
        branch=place.branch,
        timed_out=timed_out,
        teardown=teardown,
        start_failure=start_failure,
        changes_error=changes_error,
        session=session_name,
        verify=verified,
        run_id=run_id,
    )


def _resumable(registry: SubagentRegistry, agent: str) -> bool:
    provider = registry.get(agent)
    return provider is not None and provider.capabilities.resume


async def _session_turn(
    registry: SubagentRegistry,
    agent: str,
    request: SubagentRequest,
    name: str,
    sessions: Path,
) -> tuple[SubagentSession, SubagentRun]:
    """The child as a kept session called `name`, and its first turn (the fan-out's task)."""
    session_request = dataclasses.replace(
        SessionRequest.of(request, state_dir=sessions), label=name
    )
    session = await registry.open_session(agent, session_request)
    try:
        run = await session.run(
            request.prompt, cancel=request.cancel, output_schema=request.output_schema
        )
    except BaseException:
        with anyio.CancelScope(shield=True):
            await session.aclose()
        raise
    return session, run


async def _patch_path(patches: Path, name: str, place: Place) -> Path | None:
    if place.base is None:
        return None
    await anyio.Path(patches).mkdir(parents=True, exist_ok=True)
    return patches / f"{name}.patch"


async def _watch(
    run: SubagentRun,
    number: int,
    cancel: CancelSignal,
    timeout_seconds: float | None,
    observer: FanoutObserver | None,
) -> tuple[SubagentResult, bool]:
    """The run's result; its events go to `observer`; the deadline cancels it alone."""
    result: SubagentResult | None = None
    timed_out = False
    async with anyio.create_task_group() as tg:
        if observer is not None:

            async def show_events() -> None:
                async for event in run.events():
                    observer.event(number, event)

            tg.start_soon(show_events)
        with anyio.move_on_after(math.inf if timeout_seconds is None else timeout_seconds):
            result = await run.result()
        if result is None:
            timed_out = True
            cancel.cancel()
            result = await run.result()
        tg.cancel_scope.deadline = anyio.current_time() + EVENTS_DRAIN_SECONDS
    assert result is not None
    return result, timed_out


def _only_isolation_error(group: BaseExceptionGroup[BaseException]) -> IsolationError | None:
    """The first `IsolationError` of a task group's exceptions, if they are all that."""
    matched, rest = group.split(IsolationError)
    if matched is None or rest is not None:
        return None
    while True:
        first = matched.exceptions[0]
        if not isinstance(first, BaseExceptionGroup):
            return first
        matched = first
