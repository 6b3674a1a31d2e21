"""The session half of the conformance suite against a tiny session provider: it passes whole,
and each session check catches a break.

The tiny session provider is the kit's `ChildSession` over `children/conformance_child.py` (a
line protocol with the shared knobs); its one-shot runs are one-turn sessions, so every check
of the suite runs on it. `SessionBreaks` makes it break one session promise at a time; each
session check must then raise `AssertionError`. (test_conformance_suite.py breaks the run
checks on a hand-written provider.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from subagent_core import (
    CancelSignal,
    Capabilities,
    MessageChunk,
    SessionRequest,
    SubagentEvent,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentSession,
    SubagentStartError,
    ThoughtChunk,
    Usage,
    UsageEvent,
)
from subagent_core.kit import (
    ChildCommand,
    ChildFailure,
    ChildLink,
    ChildProtocol,
    ChildSession,
    ChildTurns,
    Failure,
    LineReader,
    SessionSlot,
    Teardown,
    Turn,
    TurnDriver,
    aborted_before_start_text,
    session_workspace,
    start_preamble,
)
from subagent_core.testing.conformance import (
    CHECKS,
    MISSING_COMMAND,
    RUN_CHECKS,
    SESSION_CHECKS,
    Check,
    CheckName,
    ConformanceTarget,
    ProviderConformance,
    Scenario,
)

CHILD = Path(__file__).parent / "children" / "conformance_child.py"
SLEEPER = [sys.executable, "-c", "import threading; threading.Event().wait()"]
NAME = "tiny-sessions"
_LOST = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionBreaks:
    """One session promise the tiny provider breaks on purpose (all kept by default)."""

    child_per_turn: bool = False  # every turn after the first runs on a fresh child
    interrupt_ends_child: bool = False  # an interrupt closes the child's stdin (it exits)
    dispose_closes_session: bool = False  # disposing a turn closes the whole session
    latest_turn_wins: bool = False  # a second run() disposes the live turn, never refuses
    hang_after_death: bool = False  # a turn whose child died never settles
    aclose_keeps_child: bool = False  # aclose() forgets the child instead of ending it
    uncontained: bool = False  # open_session starts a process of its own, outside containment


class TinyChild(ChildProtocol):
    """The line protocol of `conformance_child.py` as the kit's hooks."""

    kind = "ACP"

    def __init__(self, scenario: Scenario, breaks: SessionBreaks, cwd: Path) -> None:
        self._scenario = scenario
        self._breaks = breaks
        self._cwd = cwd
        self.reader: LineReader | None = None
        self.owed = 0
        """Interrupted turns whose `aborted` line has not been read yet."""

    def command(self) -> ChildCommand:
        scenario = self._scenario
        return ChildCommand(
            command=MISSING_COMMAND if scenario.missing_command else sys.executable,
            args=(str(CHILD),),
            env={"CONFORMANCE_KNOBS": json.dumps(scenario.knobs())},
            cwd=self._cwd,
        )

    async def send(self, link: ChildLink, line: str, stage: str) -> None:
        assert link.proc.stdin is not None
        try:
            await link.proc.stdin.send(line.encode() + b"\n")
        except _LOST as error:
            raise ChildFailure(await self.lost(link, stage)) from error

    async def read(self, link: ChildLink, stage: str) -> bytes:
        assert self.reader is not None
        try:
            line = await self.reader.receive_line()
        except _LOST as error:
            raise ChildFailure(await self.lost(link, stage)) from error
        link.touch()
        return line

    async def lost(self, link: ChildLink, stage: str) -> Failure:
        if await link.wait_exit():
            return link.exit_failure(stage)
        return Failure(stage, "transport")

    async def handshake(self, link: ChildLink) -> None:
        assert link.proc.stdout is not None
        self.reader = LineReader(link.proc.stdout)
        await self.send(link, "hello", "initialize")
        if await self.read(link, "initialize") != b"ready":
            raise ChildFailure(Failure("initialize", "protocol"))

    def begin_turn(self, link: ChildLink, turn: Turn) -> TurnDriver:
        return TinyTurn(self, link, turn, self._breaks)


class TinyTurn(TurnDriver):
    """One turn: `prompt <JSON>`, then `thought`/`tokens`/`chunk` lines until `done`."""

    def __init__(self, child: TinyChild, link: ChildLink, turn: Turn, breaks: SessionBreaks):
        self._child = child
        self._link = link
        self._turn = turn
        self._breaks = breaks
        self._chunks: list[str] = []
        self._tokens: int | None = None

    @property
    def output(self) -> str:
        return "".join(self._chunks)

    @property
    def usage(self) -> Usage | None:
        return None if self._tokens is None else Usage(input_tokens=self._tokens)

    async def run(self) -> None:
        child, link, turn = self._child, self._link, self._turn
        stage = child.exit_stage
        await child.send(link, "prompt " + json.dumps(turn.prompt), stage)
        while True:
            line = await child.read(link, stage)
            if line == b"aborted" and child.owed:
                child.owed -= 1  # an earlier, interrupted turn's end: never this turn's
            elif line.startswith(b"thought "):
                turn.publish(ThoughtChunk(text=line[8:].decode()))
            elif line.startswith(b"tokens "):
                self._tokens = int(line[7:])
                turn.publish(UsageEvent(input_tokens=self._tokens))
            elif line.startswith(b"chunk "):
                text = json.loads(line[6:])
                self._chunks.append(text)
                turn.publish(MessageChunk(text=text))
            elif line == b"done":
                self.finished = True
                turn.complete()
                return

    async def interrupt(self) -> None:
        if self._breaks.interrupt_ends_child:
            await self._link.close_stdin()
            return
        self._child.owed += 1
        await self._child.send(self._link, "interrupt", self._child.exit_stage)


class ClosingRun(SubagentRun):
    """A turn whose dispose closes its whole session (a break)."""

    def __init__(self, inner: SubagentRun, session: SubagentSession) -> None:
        self.id = inner.id
        self._inner = inner
        self._session = session

    async def result(self) -> SubagentResult:
        return await self._inner.result()

    def events(self) -> AsyncIterator[SubagentEvent]:
        return self._inner.events()

    async def dispose(self) -> str | None:
        text = await self._inner.dispose()
        await self._session.aclose()
        return text


class HangingRun(ClosingRun):
    """A turn that waits for ever once its child died (a break)."""

    async def result(self) -> SubagentResult:
        result = await self._inner.result()
        if "process-exit" in (result.diagnostic or ""):
            await anyio.sleep_forever()
        return result

    async def dispose(self) -> str | None:
        return await self._inner.dispose()


class TinySession(SubagentSession):
    """The kit's `ChildTurns`, with the breaks laid over it."""

    def __init__(self, provider: TinySessionProvider, request: SessionRequest, slot: SessionSlot):
        self.handle = slot.handle
        self._provider = provider
        self._breaks = provider.breaks
        self._request = request
        self._slot = slot
        self._inner: ChildTurns | None = None
        self._live: SubagentRun | None = None

    async def open(self, cwd: Path) -> None:
        self._cwd = cwd
        self._inner = await self._open_child()

    async def _open_child(self) -> ChildTurns:
        child = self._provider.child_session(self._cwd)
        await child.open(self._request.cancel)
        return ChildTurns(child, self._slot, self._request)

    @property
    def _turns(self) -> ChildTurns:
        assert self._inner is not None
        return self._inner

    @property
    def usage(self) -> Usage | None:
        return self._turns.usage

    @property
    def turns(self) -> int:
        return self._turns.turns

    @property
    def resumable(self) -> bool:
        return False

    async def run(
        self,
        prompt: str,
        *,
        cancel: CancelSignal | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> SubagentRun:
        breaks = self._breaks
        if breaks.child_per_turn and self._live is not None:
            await self._turns.aclose()
            self._inner = await self._open_child()
        if breaks.latest_turn_wins and self._live is not None:
            await self._live.dispose()
        run = self._live = await self._turns.run(prompt, cancel=cancel)
        if breaks.dispose_closes_session:
            return ClosingRun(run, self)
        if breaks.hang_after_death:
            return HangingRun(run, self)
        return run

    async def aclose(self) -> str | None:
        if self._breaks.aclose_keeps_child:
            return None  # the target's release ends it
        return await self._turns.aclose()


class TinySessionProvider:
    """Runs and sessions of the tiny child, one scenario each."""

    name = NAME
    capabilities = Capabilities(sessions=True)
    inherits_parent_context = False

    def __init__(self, target: TinySessionTarget, scenario: Scenario) -> None:
        self._target = target
        self._scenario = scenario
        self.breaks = target.breaks

    def child_session(self, cwd: Path) -> ChildSession:
        scenario = self._scenario
        session = ChildSession(
            TinyChild(scenario, self.breaks, cwd),
            provider=NAME,
            teardown=Teardown(0.5, 0.5, 1.0),
            startup_timeout_seconds=scenario.startup_timeout_seconds,
            idle_timeout_seconds=scenario.idle_timeout_seconds,
            permission="reject",
            permission_protocol="ACP",
        )
        self._target.children.append(session)
        return session

    async def start(self, request: SubagentRequest) -> SubagentRun:
        session = self.child_session(start_preamble("ACP", NAME, request, None))
        turn = session.begin_turn(request.prompt, cancel=request.cancel)
        await session.open(request.cancel)
        return session.run_of(turn, ends_session=True)

    async def open_session(self, request: SessionRequest, slot: SessionSlot) -> SubagentSession:
        cwd = session_workspace("ACP", NAME, request, None, slot, resume=False)
        if self.breaks.uncontained:
            self._target.strays.append(await _stray())
        session = TinySession(self, request, slot)
        await session.open(cwd)
        return session

    async def resume_session(self, request: SessionRequest, slot: SessionSlot) -> SubagentSession:
        raise SubagentStartError("the tiny session provider cannot resume")


async def _stray() -> anyio.abc.Process:
    """A process outside any containment, as a provider that spawns on its own would."""
    return await anyio.open_process(
        SLEEPER,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


class TinySessionTarget(ConformanceTarget):
    """The tiny session provider as a conformance target, keeping or breaking its promises."""

    aborted_text = aborted_before_start_text("ACP")

    def __init__(self, breaks: SessionBreaks | None = None) -> None:
        self.breaks = breaks or SessionBreaks()
        self.children: list[ChildSession] = []
        self.strays: list[anyio.abc.Process] = []

    def provider(self, scenario: Scenario, workspace: Path) -> TinySessionProvider:
        return TinySessionProvider(self, scenario)

    async def release(self) -> None:
        """Ends whatever a broken provider kept alive."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(30):
            for child in self.children:
                await child.aclose()
            for stray in self.strays:
                stray.kill()
                await stray.wait()


class UncontainedSessionTarget(TinySessionTarget):
    """Starts a process of its own beside a session's child (the host rebuilds it by name)."""

    def __init__(self) -> None:
        super().__init__(SessionBreaks(uncontained=True))


class TestTinySessionConformance(ProviderConformance):
    target = TinySessionTarget()


BROKEN: dict[CheckName, TinySessionTarget] = {
    "session-turns-share-one-process": TinySessionTarget(SessionBreaks(child_per_turn=True)),
    "session-turn-cancelled-then-next": TinySessionTarget(SessionBreaks(interrupt_ends_child=True)),
    "session-turn-dispose-keeps-session": TinySessionTarget(
        SessionBreaks(dispose_closes_session=True)
    ),
    "session-one-turn-at-a-time": TinySessionTarget(SessionBreaks(latest_turn_wins=True)),
    "session-child-killed-between-turns": TinySessionTarget(SessionBreaks(hang_after_death=True)),
    "session-aclose-leaves-nothing": TinySessionTarget(SessionBreaks(aclose_keeps_child=True)),
    "session-parent-sigkill-leaves-nothing": UncontainedSessionTarget(),
}


def test_every_session_check_has_a_break() -> None:
    assert sorted(BROKEN) == sorted(check.name for check in SESSION_CHECKS)
    assert (*RUN_CHECKS, *SESSION_CHECKS) == CHECKS
    assert all(check.sessions for check in SESSION_CHECKS)
    assert not any(check.sessions for check in RUN_CHECKS)


@pytest.mark.parametrize("check", SESSION_CHECKS, ids=[check.name for check in SESSION_CHECKS])
async def test_a_broken_session_promise_fails_its_check(check: Check, tmp_path: Path) -> None:
    target = BROKEN[check.name]
    try:
        with anyio.fail_after(60), pytest.raises(AssertionError):
            await check.run(target, tmp_path)
    finally:
        await target.release()


async def test_the_session_checks_skip_a_provider_without_sessions(tmp_path: Path) -> None:
    class Sessionless(TinySessionProvider):
        capabilities = Capabilities()

    class SessionlessTarget(TinySessionTarget):
        def provider(self, scenario: Scenario, workspace: Path) -> TinySessionProvider:
            return Sessionless(self, scenario)

    class Suite(ProviderConformance):
        target = SessionlessTarget()

    [check] = [check for check in SESSION_CHECKS if check.name == "session-one-turn-at-a-time"]
    with pytest.raises(pytest.skip.Exception) as skipped:
        await Suite().test_conformance(check, tmp_path)
    assert "Capabilities.sessions" in str(skipped.value)
