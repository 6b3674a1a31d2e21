"""The checks: each one promise every provider makes, asserted against the target's fake.

A check is `async def check(target, workspace) -> None`; it raises `AssertionError` when the
provider breaks the promise. Checks run their runs through a `SubagentRegistry` (the seam users
hold), and kill and reap whatever a broken provider left alive before they raise, so one
failure does not spill into the next test.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
import psutil

from subagent_core import (
    CancelSignal,
    EventsDropped,
    MessageChunk,
    SubagentEvent,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentStartError,
)
from subagent_core._process import spawn_listeners
from subagent_core.kit import DEFAULT_EVENT_CAPACITY, ClosableProvider
from subagent_core.testing import (
    kill_leaks,
    leaked_processes,
    live_descendants,
    live_group_members,
    track_spawns,
)

from ._sigkill import check_parent_sigkill_leaves_nothing
from ._target import CheckName, ConformanceTarget, Scenario

BOUND_SECONDS: Final = 0.5
"""The short startup and idle deadlines the deadline checks configure."""
EXIT_CODE: Final = 7
"""The code the fake exits with during the handshake."""
FLOOD_FRAMES: Final = 2 * DEFAULT_EVENT_CAPACITY
"""Thought frames in the flood: twice what a run's event buffer holds."""
SLACK_SECONDS: Final = 5.0
"""What a loaded machine may add to a deadline's rollback before the check calls it late."""

CheckFunction = Callable[[ConformanceTarget, Path], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Check:
    """One promise: its name (what a target skips) and the coroutine that asserts it."""

    name: CheckName
    run: CheckFunction
    sessions: bool = False
    """True for a check of a session's turns: it applies only where `Capabilities.sessions`."""


Facts = tuple[str, str, str | None]


def facts(result: SubagentResult) -> Facts:
    """What a check compares: stop reason, output and diagnostic (usage is the provider's)."""
    return (result.stop_reason, result.output, result.diagnostic)


def request(workspace: Path, cancel: CancelSignal | None = None) -> SubagentRequest:
    """The request every check sends: a fixed prompt, in the workspace."""
    if cancel is None:
        return SubagentRequest(prompt="go", cwd=workspace)
    return SubagentRequest(prompt="go", cwd=workspace, cancel=cancel)


@asynccontextmanager
async def opened(
    target: ConformanceTarget, scenario: Scenario, workspace: Path
) -> AsyncGenerator[tuple[SubagentRegistry, str]]:
    """A registry holding the target's provider for `scenario`, and the provider's name."""
    async with (
        target.open_provider(scenario, workspace) as provider,
        SubagentRegistry() as registry,
    ):
        registry.register(provider)
        yield registry, provider.name


async def start_error(
    registry: SubagentRegistry, name: str, req: SubagentRequest
) -> SubagentStartError:
    """The start error `registry.start` raises; a start that succeeds fails the check."""
    try:
        run = await registry.start(name, req)
    except SubagentStartError as error:
        return error
    await run.dispose()
    raise AssertionError("the start succeeded; a start error was expected")


def assert_nothing_left(groups: list[int], what: str) -> None:
    """Fails (after killing and reaping them) when processes of the runs are still alive."""
    leaks = leaked_processes(groups)
    if leaks:
        kill_leaks(groups)
        raise AssertionError(f"{what}: processes left alive: {'; '.join(leaks)}")


@contextmanager
def first_spawn() -> Generator[anyio.Event]:
    """An event set as soon as a managed process has been spawned inside the block."""
    event = anyio.Event()

    def seen(pid: int) -> None:
        del pid
        event.set()

    spawn_listeners.append(seen)
    try:
        yield event
    finally:
        spawn_listeners.remove(seen)


async def result_cancelled_once_streamed(
    run: SubagentRun, text: str, cancel: CancelSignal
) -> SubagentResult:
    """The run's result, with `cancel` cancelled once its `MessageChunk` events add up to
    `text`. The result is awaited meanwhile: a provider may drive its child from `result()`."""
    seen: list[str] = []
    results: list[SubagentResult] = []
    async with anyio.create_task_group() as tg:

        async def cancel_once_streamed() -> None:
            async for event in run.events():
                if isinstance(event, MessageChunk):
                    seen.append(event.text)
                    if "".join(seen) == text:
                        cancel.cancel()
                        return

        tg.start_soon(cancel_once_streamed)
        results.append(await run.result())
        tg.cancel_scope.cancel()
    return results[0]


async def result_and_events(run: SubagentRun) -> tuple[SubagentResult, list[SubagentEvent]]:
    """The run's result and every event it published, read while it ran."""
    events: list[SubagentEvent] = []
    results: list[SubagentResult] = []
    async with anyio.create_task_group() as tg:

        async def collect() -> None:
            async for event in run.events():
                events.append(event)

        tg.start_soon(collect)
        results.append(await run.result())
    return results[0], events


def outside_groups(groups: list[int]) -> list[int]:
    """Live descendants in none of `groups`, containment infrastructure aside (escapees)."""
    if sys.platform == "win32":
        return []  # no process groups: a job object holds the tree
    guard = _guard_script()
    found: list[int] = []
    for proc in live_descendants():
        with suppress(psutil.Error, OSError):
            if os.getpgid(proc.pid) in groups or (guard is not None and guard in proc.cmdline()):
                continue
            found.append(proc.pid)
    return found


def _guard_script() -> str | None:
    if sys.platform != "linux":
        return None
    from subagent_core._guard_server import GUARD_SCRIPT

    return str(GUARD_SCRIPT)


# -- the start --------------------------------------------------------------------------------


async def check_pre_cancel_spawns_nothing(target: ConformanceTarget, workspace: Path) -> None:
    """A request cancelled before `start` fails with the fixed text and spawns nothing."""
    cancel = CancelSignal()
    cancel.cancel()
    with track_spawns() as spawned:
        async with opened(target, Scenario(), workspace) as (registry, name):
            error = await start_error(registry, name, request(workspace, cancel))
    assert spawned == [], "a request cancelled before start spawned a child"
    assert (str(error), error.diagnostic) == (target.aborted_text, None)


async def check_cancel_mid_handshake_rolls_back(target: ConformanceTarget, workspace: Path) -> None:
    """The request's cancel during the handshake: the fixed text, after the tree is gone."""
    cancel = CancelSignal()
    errors: list[SubagentStartError] = []
    with track_spawns() as spawned, first_spawn() as spawn:
        async with opened(target, Scenario(hang_at="handshake"), workspace) as (registry, name):
            async with anyio.create_task_group() as tg:

                async def cancel_once_spawned() -> None:
                    await spawn.wait()
                    cancel.cancel()

                tg.start_soon(cancel_once_spawned)
                errors.append(await start_error(registry, name, request(workspace, cancel)))
                tg.cancel_scope.cancel()
            assert_nothing_left(spawned, "a start cancelled in the handshake")
    assert spawned != [], "the fake was never spawned"
    assert [(str(error), error.diagnostic) for error in errors] == [(target.aborted_text, None)]


async def check_caller_cancel_mid_handshake_rolls_back(
    target: ConformanceTarget, workspace: Path
) -> None:
    """The task awaiting `start` is cancelled in the handshake: the tree is gone first."""
    outcomes: list[str] = []
    with track_spawns() as spawned, first_spawn() as spawn:
        async with opened(target, Scenario(hang_at="handshake"), workspace) as (registry, name):
            async with anyio.create_task_group() as tg:

                async def start() -> None:
                    try:
                        run = await registry.start(name, request(workspace))
                    except SubagentStartError:
                        outcomes.append("a start error")
                    else:
                        outcomes.append("a started run")
                        await run.dispose()
                    finally:
                        tg.cancel_scope.cancel()

                tg.start_soon(start)
                await spawn.wait()
                tg.cancel_scope.cancel()
            assert_nothing_left(spawned, "a start whose caller was cancelled in the handshake")
    assert outcomes == [], f"the cancelled start ended in {outcomes[0]}, not its cancellation"


async def check_startup_deadline(target: ConformanceTarget, workspace: Path) -> None:
    """A handshake never answered ends at the startup deadline: the timeout line, rolled back."""
    scenario = Scenario(hang_at="handshake", startup_timeout_seconds=BOUND_SECONDS)
    with track_spawns() as spawned:
        async with opened(target, scenario, workspace) as (registry, name):
            started = anyio.current_time()
            error = await start_error(registry, name, request(workspace))
            elapsed = anyio.current_time() - started
            assert_nothing_left(spawned, "a start past its deadline")
    line = target.diagnostics.startup_timeout(name)
    assert (str(error), error.diagnostic) == (line, line)
    assert BOUND_SECONDS <= elapsed < BOUND_SECONDS + target.teardown_seconds + SLACK_SECONDS


async def check_exit_during_handshake(target: ConformanceTarget, workspace: Path) -> None:
    """A child that exits in the handshake fails the start with its exit code."""
    with track_spawns() as spawned:
        async with opened(target, Scenario(exit_code=EXIT_CODE), workspace) as (registry, name):
            error = await start_error(registry, name, request(workspace))
            assert_nothing_left(spawned, "a child that exited in the handshake")
    line = target.diagnostics.handshake_exit(name, EXIT_CODE)
    assert (str(error), error.diagnostic) == (line, line)


async def check_missing_command(target: ConformanceTarget, workspace: Path) -> None:
    """A command that does not exist fails the start with the spawn line; nothing runs."""
    with track_spawns() as spawned:
        async with opened(target, Scenario(missing_command=True), workspace) as (registry, name):
            error = await start_error(registry, name, request(workspace))
    line = target.diagnostics.missing_command(name)
    assert (str(error), error.diagnostic) == (line, line)
    assert spawned == [], "a missing command left a spawned process"


# -- the turn ---------------------------------------------------------------------------------


async def check_idle_deadline(target: ConformanceTarget, workspace: Path) -> None:
    """A turn gone silent ends at the idle deadline: `error`, the line, the partial output."""
    scenario = Scenario(hang_at="turn", text="partial", idle_timeout_seconds=BOUND_SECONDS)
    with track_spawns() as spawned:
        async with opened(target, scenario, workspace) as (registry, name):
            run = await registry.start(name, request(workspace))
            async with run:
                started = anyio.current_time()
                result, events = await result_and_events(run)
                waited = anyio.current_time() - started
                disposed = await run.dispose()
                assert_nothing_left(spawned, "a run past its idle deadline")
    assert facts(result) == ("error", "partial", target.diagnostics.idle_timeout(name))
    assert disposed is None
    assert waited >= BOUND_SECONDS - 0.05
    assert any(isinstance(event, MessageChunk) for event in events)
    assert not any(isinstance(event, EventsDropped) for event in events)


async def check_local_cancel_mid_turn(target: ConformanceTarget, workspace: Path) -> None:
    """The request's cancel mid-stream settles `aborted` with the partial output, no diagnostic."""
    scenario = Scenario(hang_at="turn", text="partial")
    cancel = CancelSignal()
    with track_spawns() as spawned:
        async with opened(target, scenario, workspace) as (registry, name):
            run = await registry.start(name, request(workspace, cancel))
            async with run:
                result = await result_cancelled_once_streamed(run, scenario.text, cancel)
                disposed = await run.dispose()
                assert_nothing_left(spawned, "a run cancelled mid-turn")
    assert facts(result) == ("aborted", "partial", None)
    assert disposed is None


async def check_dispose_before_result(target: ConformanceTarget, workspace: Path) -> None:
    """Disposing a live run settles it `aborted` without a diagnostic; dispose is memoized."""
    with track_spawns() as spawned:
        async with opened(target, Scenario(hang_at="turn"), workspace) as (registry, name):
            run = await registry.start(name, request(workspace))
            first = await run.dispose()
            second = await run.dispose()
            result = await run.result()
            assert_nothing_left(spawned, "a disposed run")
    assert (first, second) == (None, None)
    assert (result.stop_reason, result.diagnostic) == ("aborted", None)


async def check_cancelled_dispose_caller(target: ConformanceTarget, workspace: Path) -> None:
    """A dispose whose caller is already cancelled still tears the whole tree down.

    The provider's own run, not the registry's wrapper (which shields every dispose): a run
    used without a registry keeps the promise by itself.
    """
    scenario = Scenario(hang_at="turn", ignore_eof=True, trap_term=True)
    outcomes: list[str | None] = []
    with track_spawns() as spawned:
        async with target.open_provider(scenario, workspace) as provider:
            try:
                run = await provider.start(request(workspace))
                async with run:
                    with anyio.CancelScope() as scope:
                        scope.cancel()
                        outcomes.append(await run.dispose())
                    assert outcomes == [None], "a cancelled caller cut the dispose short"
                    assert_nothing_left(spawned, "a dispose whose caller was cancelled")
            finally:
                if isinstance(provider, ClosableProvider):
                    await provider.aclose()


async def check_flood_stays_bounded(target: ConformanceTarget, workspace: Path) -> None:
    """A flood nobody reads costs one bounded event buffer and changes nothing else."""
    scenario = Scenario(flood=FLOOD_FRAMES)
    with track_spawns() as spawned:
        async with opened(target, scenario, workspace) as (registry, name):
            run = await registry.start(name, request(workspace))
            async with run:
                result = await run.result()  # nobody reads the events while the child floods
                events = [event async for event in run.events()]
                disposed = await run.dispose()
                assert_nothing_left(spawned, "a flooding run")
    assert facts(result) == ("completed", scenario.text, None)
    assert disposed is None
    assert len(events) <= DEFAULT_EVENT_CAPACITY + 1, f"{len(events)} events held"
    assert isinstance(events[0], EventsDropped), "the oldest events were not dropped"


# -- the teardown -----------------------------------------------------------------------------


async def completed_then_gone(
    target: ConformanceTarget,
    workspace: Path,
    scenario: Scenario,
    what: str,
    live_check: Callable[[list[int]], str | None] | None = None,
) -> None:
    """One completed run of `scenario`, disposed: confirmed, and nothing of it left."""
    with track_spawns() as spawned:
        async with opened(target, scenario, workspace) as (registry, name):
            run = await registry.start(name, request(workspace))
            async with run:
                result = await run.result()
                missing = None if live_check is None else live_check(spawned)
                disposed = await run.dispose()
                assert_nothing_left(spawned, what)
    assert missing is None, missing
    assert (result.stop_reason, result.output) == ("completed", scenario.text)
    assert disposed is None


async def check_eof_deaf_tree_ended(target: ConformanceTarget, workspace: Path) -> None:
    """A child that ignores EOF is ended by the ladder; dispose confirms it."""
    await completed_then_gone(target, workspace, Scenario(ignore_eof=True), "an EOF-deaf child")


async def check_term_trapping_tree_ended(target: ConformanceTarget, workspace: Path) -> None:
    """A child deaf to EOF and SIGTERM is ended by SIGKILL; dispose confirms it."""
    scenario = Scenario(ignore_eof=True, trap_term=True)
    await completed_then_gone(target, workspace, scenario, "a TERM-trapping child")


def _holder_missing(groups: list[int]) -> str | None:
    if any(len(live_group_members(pgid)) >= 2 for pgid in groups):
        return None
    return "no grandchild shared the child's process group (the fake ignored the knob)"


def _escapee_missing(groups: list[int]) -> str | None:
    if outside_groups(groups):
        return None
    return "no process left the child's group (the fake ignored the knob)"


async def check_grandchild_holding_stdout_ended(target: ConformanceTarget, workspace: Path) -> None:
    """A grandchild holding the child's stdout neither blocks the run nor outlives it."""
    scenario = Scenario(grandchild_holds_stdout=True)
    what = "a grandchild holding stdout"
    await completed_then_gone(target, workspace, scenario, what, _holder_missing)


async def check_escaped_grandchild_ended(target: ConformanceTarget, workspace: Path) -> None:
    """A grandchild that left the child's process group (`setsid`) is ended too."""
    scenario = Scenario(setsid_escapee=True)
    await completed_then_gone(target, workspace, scenario, "a setsid escapee", _escapee_missing)


# -- many runs --------------------------------------------------------------------------------


async def check_concurrent_runs_isolated(target: ConformanceTarget, workspace: Path) -> None:
    """Runs at once share nothing: each keeps its own output, facts, id and process tree."""
    outcomes: dict[str, object] = {}
    expected: dict[str, object] = {}
    ids: list[str] = []

    async def complete(key: str) -> None:
        async with opened(target, Scenario(text=key), workspace) as (registry, name):
            run = await registry.start(name, request(workspace))
            ids.append(run.id)
            async with run:
                outcomes[key] = facts(await run.result())

    async def exit_early(key: str, code: int) -> None:
        async with opened(target, Scenario(exit_code=code), workspace) as (registry, name):
            error = await start_error(registry, name, request(workspace))
            outcomes[key] = error.diagnostic
            expected[key] = target.diagnostics.handshake_exit(name, code)

    async def cancel_mid_turn(key: str) -> None:
        cancel = CancelSignal()
        scenario = Scenario(hang_at="turn", text=key)
        async with opened(target, scenario, workspace) as (registry, name):
            run = await registry.start(name, request(workspace, cancel))
            ids.append(run.id)
            async with run:
                outcomes[key] = facts(await result_cancelled_once_streamed(run, key, cancel))

    with track_spawns() as spawned:
        async with anyio.create_task_group() as tg:
            for index in range(4):
                key = f"run {index} done"
                expected[key] = ("completed", key, None)
                tg.start_soon(complete, key)
            if "local-cancel-mid-turn" not in target.skips:
                for index in range(2):
                    key = f"run {index} cancelled"
                    expected[key] = ("aborted", key, None)
                    tg.start_soon(cancel_mid_turn, key)
            if "exit-during-handshake" not in target.skips:
                for code in (EXIT_CODE, EXIT_CODE + 1):
                    tg.start_soon(exit_early, f"exit {code}", code)
        assert_nothing_left(spawned, "concurrent runs")
    assert outcomes == expected
    assert len(set(ids)) == len(ids), "two runs shared an id"


RUN_CHECKS: Final[tuple[Check, ...]] = (
    Check("pre-cancel-spawns-nothing", check_pre_cancel_spawns_nothing),
    Check("cancel-mid-handshake-rolls-back", check_cancel_mid_handshake_rolls_back),
    Check("caller-cancel-mid-handshake-rolls-back", check_caller_cancel_mid_handshake_rolls_back),
    Check("startup-deadline", check_startup_deadline),
    Check("exit-during-handshake", check_exit_during_handshake),
    Check("missing-command", check_missing_command),
    Check("idle-deadline", check_idle_deadline),
    Check("local-cancel-mid-turn", check_local_cancel_mid_turn),
    Check("dispose-before-result", check_dispose_before_result),
    Check("cancelled-dispose-caller", check_cancelled_dispose_caller),
    Check("flood-stays-bounded", check_flood_stays_bounded),
    Check("eof-deaf-tree-ended", check_eof_deaf_tree_ended),
    Check("term-trapping-tree-ended", check_term_trapping_tree_ended),
    Check("grandchild-holding-stdout-ended", check_grandchild_holding_stdout_ended),
    Check("escaped-grandchild-ended", check_escaped_grandchild_ended),
    Check("parent-sigkill-leaves-nothing", check_parent_sigkill_leaves_nothing),
    Check("concurrent-runs-isolated", check_concurrent_runs_isolated),
)
"""The checks of one-shot runs, in the order the suite runs them (the session checks follow
them in `CHECKS`); a target's `skips` names any that does not apply to it."""
