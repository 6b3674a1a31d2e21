"""The session checks: a child kept for several turns keeps every promise a run makes.

They apply to a provider with `Capabilities.sessions` and go through
`SubagentRegistry.open_session`, as users do. The fake answers each turn with its own prompt
(`echo_prompt`, as `ConformanceTarget.answer` says), so every turn's output is exact; with
`hang_at="turn"` the first turn goes silent after its answer and later turns answer. A turn
that must settle is bounded here (`SETTLE_SECONDS`): a provider that hangs fails the check
rather than the test's timeout.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import signal
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import anyio
import psutil

from subagent_core import (
    CancelSignal,
    MessageChunk,
    SessionRequest,
    SubagentError,
    SubagentRegistry,
    SubagentResult,
    SubagentRun,
    SubagentSession,
    Usage,
)
from subagent_core.kit import add_usage
from subagent_core.testing import poll_until, track_spawns

from ._checks import Check, Facts, assert_nothing_left, facts, opened
from ._sigkill import HOSTILE, check_session_parent_sigkill_leaves_nothing
from ._target import ConformanceTarget, Scenario

PROMPTS: Final = ("first turn", "second turn", "third turn")
"""The prompts of a session's turns, in order."""
SETTLE_SECONDS: Final = 20.0
"""The longest a turn of the fake may take to settle before the check calls it hung."""

ECHO: Final = Scenario(echo_prompt=True)
"""Every turn answers its prompt."""
SILENT_FIRST: Final = Scenario(echo_prompt=True, hang_at="turn")
"""The first turn streams its answer, then goes silent; later turns answer their prompts."""


@asynccontextmanager
async def session_of(
    target: ConformanceTarget, scenario: Scenario, workspace: Path
) -> AsyncGenerator[SubagentSession]:
    """A session of the target's provider for `scenario`, closed on exit."""
    async with (
        opened(target, scenario, workspace) as (registry, name),
        await _open(registry, name, workspace) as session,
    ):
        yield session


async def _open(registry: SubagentRegistry, name: str, workspace: Path) -> SubagentSession:
    return await registry.open_session(name, SessionRequest(cwd=workspace))


async def turn_result(session: SubagentSession, prompt: str) -> SubagentResult:
    """One whole turn's result (the turn disposed after), bounded by `SETTLE_SECONDS`.

    A `run()` the session refuses fails the check with the error's code.
    """
    with anyio.move_on_after(SETTLE_SECONDS):
        try:
            run = await session.run(prompt)
        except SubagentError as error:
            raise AssertionError(f"run({prompt!r}) was refused: {error.code}") from None
        async with run:
            return await run.result()
    raise AssertionError(f"the turn {prompt!r} did not settle within {SETTLE_SECONDS} s")


async def once_streamed(
    run: SubagentRun, text: str, action: Callable[[], Awaitable[None]]
) -> SubagentResult:
    """The run's result, with `action` (which must end the turn) done once its `MessageChunk`
    events add up to `text`. The result is awaited meanwhile: a provider may drive its child
    from `result()`. Bounded by `SETTLE_SECONDS`."""
    results: list[SubagentResult] = []
    with anyio.move_on_after(SETTLE_SECONDS):
        async with anyio.create_task_group() as tg:

            async def settle() -> None:
                results.append(await run.result())

            tg.start_soon(settle)
            seen = ""
            async for event in run.events():
                if isinstance(event, MessageChunk):
                    seen += event.text
                    if seen == text:
                        break
            await action()
    if not results:
        raise AssertionError(f"the live turn did not settle within {SETTLE_SECONDS} s")
    return results[0]


def expect(result: SubagentResult, expected: Facts, what: str) -> None:
    """Fails unless `result` has the `expected` facts, naming `what` and what it got."""
    got = facts(result)
    assert got == expected, f"{what} settled {got}, not {expected}"


async def killed(pid: int) -> None:
    """SIGKILLs `pid` and waits (bounded) until it has been reaped: the kill is over before
    the next turn begins, as between two turns."""
    os.kill(pid, signal.SIGKILL if sys.platform != "win32" else signal.SIGTERM)
    with anyio.move_on_after(SETTLE_SECONDS):
        await poll_until(lambda: not psutil.pid_exists(pid))


def one_child(spawned: list[int]) -> None:
    """Fails unless the session ran on at most one child (an in-process provider has none)."""
    assert len(spawned) <= 1, f"the session spawned {len(spawned)} processes, not one"


async def check_session_turns_share_one_process(target: ConformanceTarget, workspace: Path) -> None:
    """Three turns run on the one child `open_session` started, each answering its own prompt
    exactly; the session's usage is the sum of the turns' (when the fake reports usage)."""
    results: list[SubagentResult] = []
    with track_spawns() as spawned:
        async with session_of(target, ECHO, workspace) as session:
            at_open = list(spawned)
            for prompt in PROMPTS:
                results.append(await turn_result(session, prompt))
            turns, usage = session.turns, session.usage
        assert_nothing_left(spawned, "a closed session")
    expected = [("completed", target.answer(prompt), None) for prompt in PROMPTS]
    got = [facts(result) for result in results]
    assert got == expected, f"the turns settled {got}, not {expected}"
    assert spawned == at_open, f"the turns spawned {len(spawned) - len(at_open)} process(es)"
    one_child(at_open)
    assert turns == len(PROMPTS), f"the session counted {turns} turns"
    reported = [result.usage for result in results if result.usage is not None]
    if reported:
        total: Usage | None = functools.reduce(add_usage, reported)
        assert usage == total, f"the session's usage {usage} is not its turns' sum {total}"


async def check_session_turn_cancelled_then_next(
    target: ConformanceTarget, workspace: Path
) -> None:
    """A turn cancelled mid-stream settles `aborted` with its partial output; the child stays
    and the next turn completes."""
    cancel = CancelSignal()
    partial = target.answer(PROMPTS[0])

    async def cancel_it() -> None:
        cancel.cancel()

    with track_spawns() as spawned:
        async with session_of(target, SILENT_FIRST, workspace) as session:
            async with await session.run(PROMPTS[0], cancel=cancel) as run:
                aborted = await once_streamed(run, partial, cancel_it)
            after = await turn_result(session, PROMPTS[1])
        assert_nothing_left(spawned, "a session with a cancelled turn")
    expect(aborted, ("aborted", partial, None), "the cancelled turn")
    expect(after, ("completed", target.answer(PROMPTS[1]), None), "the turn after it")
    one_child(spawned)


async def check_session_turn_dispose_keeps_session(
    target: ConformanceTarget, workspace: Path
) -> None:
    """Disposing a running turn interrupts it (`aborted`, partial output, dispose confirmed)
    and leaves the session open: the next turn completes on the same child."""
    partial = target.answer(PROMPTS[0])
    disposed: list[str | None] = []
    with track_spawns() as spawned:
        async with session_of(target, SILENT_FIRST, workspace) as session:
            run = await session.run(PROMPTS[0])

            async def dispose() -> None:
                disposed.append(await run.dispose())

            aborted = await once_streamed(run, partial, dispose)
            after = await turn_result(session, PROMPTS[1])
        assert_nothing_left(spawned, "a session with a disposed turn")
    expect(aborted, ("aborted", partial, None), "the disposed turn")
    assert disposed == [None], f"the turn's dispose answered {disposed[0]!r}"
    expect(after, ("completed", target.answer(PROMPTS[1]), None), "the turn after it")
    one_child(spawned)


async def check_session_one_turn_at_a_time(target: ConformanceTarget, workspace: Path) -> None:
    """A second `run()` while a turn is live raises `SubagentError` (`TURN_IN_PROGRESS`) and
    changes nothing: the live turn ends as disposed, and a later turn completes."""
    partial = target.answer(PROMPTS[0])
    refused: list[str | None] = []
    with track_spawns() as spawned:
        async with session_of(target, SILENT_FIRST, workspace) as session:
            live = await session.run(PROMPTS[0])

            async def second_then_dispose() -> None:
                try:
                    second = await session.run(PROMPTS[1])
                except SubagentError as error:
                    refused.append(error.code)
                else:
                    refused.append(None)
                    await second.dispose()
                await live.dispose()

            aborted = await once_streamed(live, partial, second_then_dispose)
            after = await turn_result(session, PROMPTS[2])
        assert_nothing_left(spawned, "a session asked for two turns at once")
    assert refused == ["TURN_IN_PROGRESS"], "a second turn was accepted while one was live"
    expect(aborted, ("aborted", partial, None), "the live turn")
    expect(after, ("completed", target.answer(PROMPTS[2]), None), "the turn after it")


async def check_session_child_killed_between_turns(
    target: ConformanceTarget, workspace: Path
) -> None:
    """A child killed between turns makes the next turn settle `error` with the exit line,
    never a hang; closing the session then leaves nothing."""
    with track_spawns() as spawned:
        async with opened(target, ECHO, workspace) as (registry, name):
            session = await _open(registry, name, workspace)
            try:
                first = await turn_result(session, PROMPTS[0])
                assert spawned, "the session spawned no child (an in-process provider skips this)"
                await killed(spawned[0])
                later = await turn_result(session, PROMPTS[1])
            finally:
                closed = await session.aclose()
            assert_nothing_left(spawned, "a session whose child was killed")
    expect(first, ("completed", target.answer(PROMPTS[0]), None), "the first turn")
    line = target.diagnostics.turn_exit(name, "SIGKILL")
    got = (later.stop_reason, later.diagnostic)
    assert got == ("error", line), f"the turn after the kill settled {got}"
    assert closed is None, f"aclose() answered {closed!r}"


async def check_session_aclose_leaves_nothing(target: ConformanceTarget, workspace: Path) -> None:
    """`aclose()` ends a hostile child's whole tree and confirms it (memoized); the closed
    session refuses another turn (`SESSION_CLOSED`)."""
    codes: list[str] = []
    with track_spawns() as spawned:
        scenario = dataclasses.replace(HOSTILE, echo_prompt=True)
        async with opened(target, scenario, workspace) as (registry, name):
            session = await _open(registry, name, workspace)
            try:
                first = await turn_result(session, PROMPTS[0])
            finally:
                closed = await session.aclose()
            again = await session.aclose()
            try:
                await (await session.run(PROMPTS[1])).dispose()
            except SubagentError as error:
                codes.append(error.code)
            assert_nothing_left(spawned, "a closed session")
    expect(first, ("completed", target.answer(PROMPTS[0]), None), "the first turn")
    assert (closed, again) == (None, None), f"aclose() answered {closed!r}, then {again!r}"
    assert codes == ["SESSION_CLOSED"], "a closed session took another turn"


SESSION_CHECKS: Final[tuple[Check, ...]] = (
    Check("session-turns-share-one-process", check_session_turns_share_one_process, True),
    Check("session-turn-cancelled-then-next", check_session_turn_cancelled_then_next, True),
    Check("session-turn-dispose-keeps-session", check_session_turn_dispose_keeps_session, True),
    Check("session-one-turn-at-a-time", check_session_one_turn_at_a_time, True),
    Check("session-child-killed-between-turns", check_session_child_killed_between_turns, True),
    Check("session-aclose-leaves-nothing", check_session_aclose_leaves_nothing, True),
    Check(
        "session-parent-sigkill-leaves-nothing", check_session_parent_sigkill_leaves_nothing, True
    ),
)
"""The checks of a session's turns, run after the run checks (`CHECKS` holds both)."""
