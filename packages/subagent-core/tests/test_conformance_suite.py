"""The conformance suite against a tiny provider: it passes whole, and each run check catches
a break.

The tiny provider is written here over `open_managed_process` and `children/conformance_child.py`
(a line protocol with the shared knobs), since core's tests cannot import a real provider.
`Breaks` makes it fail one promise at a time; each check must then raise `AssertionError`. It
keeps no sessions, so the session checks skip here (test_conformance_sessions.py breaks them).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
import anyio.abc
import pytest
from subagent_core import (
    NO_CAPABILITIES,
    MessageChunk,
    StopReason,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentStartError,
    ThoughtChunk,
    child_env,
)
from subagent_core.kit import (
    DEFAULT_EVENT_CAPACITY,
    EventBuffer,
    IdleDeadline,
    LineReader,
    ManagedProcess,
    OwnedTask,
    SpawnError,
    failure_line,
    new_run_id,
    open_managed_process,
)
from subagent_core.testing.conformance import (
    MISSING_COMMAND,
    RUN_CHECKS,
    Check,
    CheckName,
    ConformanceTarget,
    ProviderConformance,
    Scenario,
)

CHILD = Path(__file__).parent / "children" / "conformance_child.py"
SLEEPER = [sys.executable, "-c", "import threading; threading.Event().wait()"]
NAME = "tiny"
ABORTED = "subagent request was aborted before the tiny child started"
GRACES = (0.5, 0.5, 1.0)
BOUND = 10.0  # the tiny provider's bound on any wait for its own owner

Teardown = Literal["ladder", "eof", "term-leader", "kill-leader", "kill-group"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Breaks:
    """One promise the tiny provider breaks on purpose (all kept by default)."""

    spawn_when_cancelled: bool = False  # starts a child for a cancelled request
    keep_child_on_failed_start: bool = False  # a failed or cancelled start leaves its child
    timeout_category: str = "timeout"  # the startup deadline's category
    exit_code_shown: bool = True  # the handshake exit line carries the exit code
    spawn_stage: str = "process"  # the missing command's stage
    idle_keeps_output: bool = True  # the idle deadline keeps the partial output
    cancel_stop_reason: StopReason = "aborted"  # what a local cancel settles as
    memoized_dispose: bool = True  # a second dispose answers as the first
    shielded_dispose: bool = True  # a cancelled caller cannot cut the dispose short
    event_capacity: int = DEFAULT_EVENT_CAPACITY  # the event buffer's bound
    teardown: Teardown = "ladder"  # how far dispose goes before the child is left alone
    shared_output: bool = False  # every run of a target writes one output
    uncontained: bool = False  # a process started beside the child, outside containment


class TinyRun(SubagentRun):
    """One tiny child, driven by one owner task from spawn to the end of its teardown."""

    def __init__(self, provider: TinyProvider, request: SubagentRequest) -> None:
        self.id = new_run_id()
        self._provider = provider
        self._breaks = provider.breaks
        self._request = request
        self._events = EventBuffer(capacity=provider.breaks.event_capacity)
        self._output = provider.shared if provider.breaks.shared_output else []
        self._ready = anyio.Event()
        self._settled = anyio.Event()
        self._gone = anyio.Event()
        self._start_error: SubagentStartError | None = None
        self._result: SubagentResult | None = None
        self._teardown: str | None = None
        self._disposed: list[str | None] = []
        self.owner: OwnedTask | None = None

    async def open(self) -> None:
        self.owner = OwnedTask.start(self._own, name="tiny.run")
        try:
            await self._ready.wait()
        except BaseException:
            with anyio.CancelScope(shield=True), anyio.move_on_after(BOUND):
                self.owner.cancel()
                await self._gone.wait()
            raise
        if self._start_error is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(BOUND):
                await self._gone.wait()
            raise self._start_error

    async def result(self) -> SubagentResult:
        if self._result is None:
            with self._request.cancel.cancel_scope():
                await self._settled.wait()
            self._settle(self._breaks.cancel_stop_reason, None)
        assert self._result is not None
        return self._result

    async def dispose(self) -> str | None:
        if self._disposed:
            if self._breaks.memoized_dispose:
                return self._disposed[0]
            return failure_line(NAME, "teardown", "unknown")
        with anyio.CancelScope(shield=self._breaks.shielded_dispose):
            self._settle("aborted", None)
            if self.owner is not None:
                self.owner.cancel()
            with anyio.move_on_after(BOUND):
                await self._gone.wait()
            self._disposed.append(self._teardown)
        return self._teardown

    def _settle(
        self, stop_reason: StopReason, diagnostic: str | None, *, output: bool = True
    ) -> None:
        if self._result is None:
            text = "".join(self._output) if output else ""
            self._result = SubagentResult(
                stop_reason=stop_reason, output=text, diagnostic=diagnostic
            )
            self._events.close()
            self._settled.set()

    def _fail_start(self, line: str | None) -> None:
        if not self._ready.is_set():
            self._start_error = SubagentStartError(ABORTED if line is None else line, line)
            self._ready.set()

    # -- the owner -------------------------------------------------------------------------

    async def _own(self) -> None:
        scenario = self._provider.scenario
        command = MISSING_COMMAND if scenario.missing_command else sys.executable
        env = child_env({"CONFORMANCE_KNOBS": json.dumps(scenario.knobs())})
        try:
            if self._breaks.uncontained:
                await self._provider.start_stray()
            async with open_managed_process(
                [command, str(CHILD)], env=env, stderr="devnull"
            ) as proc:
                try:
                    await self._drive(proc)
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._end(proc)
        except SpawnError:
            self._fail_start(failure_line(NAME, self._breaks.spawn_stage, "process-start"))
        finally:
            self._fail_start(None)
            self._settle("aborted", None)
            self._gone.set()

    async def _end(self, proc: ManagedProcess) -> None:
        published = self._start_error is None and self._ready.is_set()
        lingers = self._breaks.teardown != "ladder" if published else False
        if lingers or (not published and self._breaks.keep_child_on_failed_start):
            await self._stop_short(proc, self._breaks.teardown if published else "ladder")
            self._gone.set()
            await self._provider.released.wait()  # the test's cleanup ends what is left
        confirmed = await proc.terminate(*GRACES)
        self._teardown = None if confirmed else failure_line(NAME, "teardown", "unknown")

    async def _stop_short(self, proc: ManagedProcess, teardown: Teardown) -> None:
        if teardown == "ladder":
            return  # a failed start that simply keeps its child
        await proc.close_stdin()
        with suppress(ProcessLookupError):  # a child that exits on EOF may be gone already
            if teardown == "term-leader":
                proc.send_signal(signal.SIGTERM)
            elif teardown == "kill-leader":
                proc.send_signal(signal.SIGKILL)
            elif teardown == "kill-group" and proc.pgid is not None:
                os.killpg(proc.pgid, signal.SIGKILL)
        with anyio.move_on_after(1.0):
            await proc.wait()

    async def _drive(self, proc: ManagedProcess) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        reader = LineReader(proc.stdout)
        scenario = self._provider.scenario
        startup = scenario.startup_timeout_seconds
        deadline = anyio.current_time() + startup if startup is not None else float("inf")
        line: bytes | None = None
        with self._request.cancel.cancel_scope(deadline=deadline) as scope:
            try:
                await proc.stdin.send(b"hello\n")
                line = await reader.receive_line()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                line = None
        if self._request.cancel.cancelled:
            self._fail_start(None)
            return
        if scope.cancelled_caught:
            self._fail_start(failure_line(NAME, "initialize", self._breaks.timeout_category))
            return
        if line != b"ready":
            outcome = await proc.wait()
            code = outcome.exit_code if self._breaks.exit_code_shown else None
            exited = failure_line(NAME, "initialize", "process-exit", exit_code=code)
            self._fail_start(exited)
            return
        self._ready.set()
        await self._turn(proc, reader)
        await anyio.sleep_forever()  # until dispose cancels the owner

    async def _turn(self, proc: ManagedProcess, reader: LineReader) -> None:
        assert proc.stdin is not None
        idle = IdleDeadline(self._provider.scenario.idle_timeout_seconds)
        await proc.stdin.send(b"prompt\n")
        async with anyio.create_task_group() as tg:

            async def watch_idle() -> None:
                await idle.expired()
                line = failure_line(NAME, "prompt", "timeout")
                self._settle("error", line, output=self._breaks.idle_keeps_output)
                tg.cancel_scope.cancel()

            tg.start_soon(watch_idle)
            try:
                while self._result is None:
                    line = await reader.receive_line()
                    idle.touch()
                    if line.startswith(b"thought "):
                        self._events.publish(ThoughtChunk(text=line[8:].decode()))
                    elif line.startswith(b"chunk "):
                        text = json.loads(line[6:])
                        self._output.append(text)
                        self._events.publish(MessageChunk(text=text))
                    elif line == b"done":
                        self._settle("completed", None)
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                outcome = await proc.wait()
                exited = failure_line(NAME, "process", "process-exit", exit_code=outcome.exit_code)
                self._settle("error", exited)
            tg.cancel_scope.cancel()


class TinyProvider:
    """A provider of tiny runs, one scenario each."""

    name = NAME
    capabilities = NO_CAPABILITIES
    inherits_parent_context = False

    def __init__(self, scenario: Scenario, breaks: Breaks, shared: list[str]) -> None:
        self.scenario = scenario
        self.breaks = breaks
        self.shared = shared
        self.released = anyio.Event()
        self.runs: list[TinyRun] = []
        self.strays: list[anyio.abc.Process] = []

    async def start(self, request: SubagentRequest) -> SubagentRun:
        if request.cancel.cancelled and not self.breaks.spawn_when_cancelled:
            raise SubagentStartError(ABORTED)
        run = TinyRun(self, request)
        self.runs.append(run)
        await run.open()
        return run

    async def start_stray(self) -> None:
        """A process outside any containment, as a provider that spawns on its own would."""
        stray = await anyio.open_process(
            SLEEPER,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.strays.append(stray)


class TinyTarget(ConformanceTarget):
    """The tiny provider as a conformance target, keeping or breaking its promises."""

    aborted_text = ABORTED

    def __init__(self, breaks: Breaks | None = None) -> None:
        self.breaks = breaks or Breaks()
        self.shared: list[str] = []
        self.providers: list[TinyProvider] = []

    def provider(self, scenario: Scenario, workspace: Path) -> TinyProvider:
        provider = TinyProvider(scenario, self.breaks, self.shared)
        self.providers.append(provider)
        return provider

    async def release(self) -> None:
        """Ends whatever a broken provider kept alive."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(30):
            for provider in self.providers:
                provider.released.set()
                for run in provider.runs:
                    if run.owner is not None:
                        run.owner.cancel()
                        await run.owner.wait()


class UncontainedTarget(TinyTarget):
    """Spawns a process of its own beside the managed child (the host rebuilds it by name)."""

    def __init__(self) -> None:
        super().__init__(Breaks(uncontained=True))


class TestTinyConformance(ProviderConformance):
    target = TinyTarget()


BROKEN: dict[CheckName, TinyTarget] = {
    "pre-cancel-spawns-nothing": TinyTarget(Breaks(spawn_when_cancelled=True)),
    "cancel-mid-handshake-rolls-back": TinyTarget(Breaks(keep_child_on_failed_start=True)),
    "caller-cancel-mid-handshake-rolls-back": TinyTarget(Breaks(keep_child_on_failed_start=True)),
    "startup-deadline": TinyTarget(Breaks(timeout_category="transport")),
    "exit-during-handshake": TinyTarget(Breaks(exit_code_shown=False)),
    "missing-command": TinyTarget(Breaks(spawn_stage="initialize")),
    "idle-deadline": TinyTarget(Breaks(idle_keeps_output=False)),
    "local-cancel-mid-turn": TinyTarget(Breaks(cancel_stop_reason="error")),
    "dispose-before-result": TinyTarget(Breaks(memoized_dispose=False)),
    "cancelled-dispose-caller": TinyTarget(Breaks(shielded_dispose=False)),
    "flood-stays-bounded": TinyTarget(Breaks(event_capacity=10 * DEFAULT_EVENT_CAPACITY)),
    "eof-deaf-tree-ended": TinyTarget(Breaks(teardown="eof")),
    "term-trapping-tree-ended": TinyTarget(Breaks(teardown="term-leader")),
    "grandchild-holding-stdout-ended": TinyTarget(Breaks(teardown="kill-leader")),
    "escaped-grandchild-ended": TinyTarget(Breaks(teardown="kill-group")),
    "parent-sigkill-leaves-nothing": UncontainedTarget(),
    "concurrent-runs-isolated": TinyTarget(Breaks(shared_output=True)),
}


def test_every_check_has_a_break() -> None:
    assert sorted(BROKEN) == sorted(check.name for check in RUN_CHECKS)


@pytest.mark.parametrize("check", RUN_CHECKS, ids=[check.name for check in RUN_CHECKS])
async def test_a_broken_promise_fails_its_check(check: Check, tmp_path: Path) -> None:
    target = BROKEN[check.name]
    try:
        with anyio.fail_after(60), pytest.raises(AssertionError):
            await check.run(target, tmp_path)
    finally:
        await target.release()


def test_a_scenario_hands_over_only_the_knobs_it_sets() -> None:
    assert Scenario().knobs() == {"text": "done"}
    scenario = Scenario(
        hang_at="turn",
        exit_code=3,
        trap_term=True,
        flood=5,
        missing_command=True,
        idle_timeout_seconds=0.5,
    )
    assert scenario.knobs() == {
        "text": "done",
        "hang_at": "turn",
        "exit_code": 3,
        "trap_term": True,
        "flood": 5,
    }
    assert scenario.deadlines() == {"idle_timeout_seconds": 0.5}


def test_a_target_without_a_provider_says_so(tmp_path: Path) -> None:
    class Empty(ConformanceTarget):
        aborted_text = ABORTED

    with pytest.raises(NotImplementedError):
        Empty().provider(Scenario(), tmp_path)
