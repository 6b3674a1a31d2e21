"""The lifecycle kit on a real child over real stdio: one process, several turns, every end.

`LineChild` is the smallest provider there is: a handshake line, then one prompt line per turn
answered by `chunk` lines and `done`. Every test runs a real process (tests/children/turns.py)
and the leak guard checks that nothing is left.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from subagent_core import (
    Budget,
    CancelSignal,
    Capabilities,
    MessageChunk,
    SessionRequest,
    SubagentError,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentSession,
    SubagentStartError,
    Usage,
    UsageEvent,
    list_records,
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
    OwnedTask,
    SessionSlot,
    Teardown,
    Turn,
    TurnDriver,
    open_managed_process,
    session_workspace,
    watching_child,
)

CHILD = Path(__file__).parent / "children" / "turns.py"
PROVIDER = "lines"
_LOST = (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


def _line(stage: str, category: str, extra: str = "") -> str:
    return f"Subagent failure (provider: {PROVIDER}; stage: {stage}; category: {category}{extra})"


class LineChild(ChildProtocol):
    kind = "ACP"

    def __init__(
        self,
        *args: str,
        command: str = sys.executable,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        on_session: Callable[[str], None] | None = None,
    ) -> None:
        self._argv = (command, str(CHILD), *args) if command == sys.executable else (command,)
        self._env = dict(env or {})
        self._cwd = cwd
        self._on_session = on_session
        self.reader: LineReader | None = None
        self.pids: list[int] = []
        self.interrupts = 0
        self.owed = 0
        """Interrupted turns whose `interrupted` line has not been read yet."""

    def command(self) -> ChildCommand:
        return ChildCommand(
            command=self._argv[0], args=self._argv[1:], env=self._env, cwd=self._cwd
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
        self.pids.append(link.proc.pid)
        self.reader = LineReader(link.proc.stdout)
        await self.send(link, "hello", "initialize")
        answer = await self.read(link, "initialize")
        if answer.split(b" ", 1)[0] != b"ready":
            raise ChildFailure(Failure("initialize", "protocol"))
        if answer != b"ready" and self._on_session is not None:
            self._on_session(answer[6:].decode(errors="replace"))

    def begin_turn(self, link: ChildLink, turn: Turn) -> TurnDriver:
        return LineTurn(self, link, turn)


class LineTurn(TurnDriver):
    def __init__(self, child: LineChild, link: ChildLink, turn: Turn) -> None:
        self._child = child
        self._link = link
        self._turn = turn
        self._chunks: list[str] = []
        self._tokens: int | None = None

    @property
    def output(self) -> str:
        return "".join(self._chunks)

    @property
    def usage(self) -> Usage | None:
        return None if self._tokens is None else Usage(input_tokens=self._tokens)

    async def run(self) -> None:
        child, link = self._child, self._link
        await child.send(link, f"P {self._turn.prompt}", "process")
        while True:
            line = await child.read(link, "process")
            if line == b"interrupted" and child.owed:
                child.owed -= 1  # an earlier, interrupted turn's end: never this turn's
            elif line.startswith(b"chunk "):
                text = line[6:].decode()
                self._chunks.append(text)
                self._turn.publish(MessageChunk(text=text))
            elif line.startswith(b"tokens "):
                self._tokens = int(line[7:])
                self._turn.publish(UsageEvent(input_tokens=self._tokens))
            elif line == b"done":
                self.finished = True
                self._turn.complete()
                return

    async def interrupt(self) -> None:
        self._child.interrupts += 1
        self._child.owed += 1
        await self._child.send(self._link, "interrupt", "process")


def session_of(
    child: LineChild,
    *,
    startup: float | None = 30.0,
    idle: float | None = 30.0,
) -> ChildSession:
    return ChildSession(
        child,
        provider=PROVIDER,
        teardown=Teardown(0.5, 0.5, 1.0),
        startup_timeout_seconds=startup,
        idle_timeout_seconds=idle,
        permission="reject",
        permission_protocol="ACP",
    )


async def turn_result(session: ChildSession, prompt: str, **kwargs: CancelSignal) -> SubagentResult:
    turn = session.begin_turn(prompt, **kwargs)
    return await session.run_of(turn, ends_session=False).result()


async def test_three_turns_run_on_one_process_each_settled_exactly() -> None:
    child = LineChild()
    session = session_of(child)
    with anyio.fail_after(30):
        await session.open()
        first = await turn_result(session, "a")
        second = await turn_result(session, "usage")
        third = await turn_result(session, "c")
        assert await session.aclose() is None
    assert first == SubagentResult(stop_reason="completed", output="a")
    assert second == SubagentResult(
        stop_reason="completed", output="usage", usage=Usage(input_tokens=5)
    )
    assert third == SubagentResult(stop_reason="completed", output="c")
    assert len(child.pids) == 1
    assert session.turns == 3


async def test_each_turn_has_its_own_events() -> None:
    session = session_of(LineChild())
    with anyio.fail_after(30):
        await session.open()
        seen: list[list[str]] = []
        for prompt in ("x", "y"):
            run = session.run_of(session.begin_turn(prompt), ends_session=False)
            seen.append([e.text async for e in run.events() if isinstance(e, MessageChunk)])
        await session.aclose()
    assert seen == [["x"], ["y"]]


async def test_a_turn_cancelled_mid_stream_leaves_the_child_usable() -> None:
    child = LineChild()
    session = session_of(child)
    with anyio.fail_after(30):
        await session.open()
        cancel = CancelSignal()
        turn = session.begin_turn("hang", cancel=cancel)
        run = session.run_of(turn, ends_session=False)
        async with anyio.create_task_group() as tg:
            tg.start_soon(turn.wait_done)
            await anyio.wait_all_tasks_blocked()
            cancel.cancel()
        aborted = await run.result()
        after = await turn_result(session, "b")
        await session.aclose()
    assert aborted == SubagentResult(stop_reason="aborted")
    assert child.interrupts == 1
    assert after == SubagentResult(stop_reason="completed", output="b")


async def test_disposing_a_running_session_turn_interrupts_it_and_keeps_the_child() -> None:
    child = LineChild()
    session = session_of(child)
    with anyio.fail_after(30):
        await session.open()
        run = session.run_of(session.begin_turn("hang"), ends_session=False)
        await anyio.wait_all_tasks_blocked()  # the turn is with the child
        assert await run.dispose() is None
        assert (await run.result()).stop_reason == "aborted"
        assert session.is_open
        after = await turn_result(session, "next")
        await session.aclose()
    assert child.interrupts == 1
    assert after.output == "next"


async def test_one_turn_at_a_time() -> None:
    session = session_of(LineChild())
    with anyio.fail_after(30):
        await session.open()
        run = session.run_of(session.begin_turn("hang"), ends_session=False)
        with pytest.raises(SubagentError) as raised:
            session.begin_turn("second")
        assert raised.value.code == "TURN_IN_PROGRESS"
        await run.dispose()
        await session.aclose()
        with pytest.raises(SubagentError) as closed:
            session.begin_turn("late")
    assert closed.value.code == "SESSION_CLOSED"


async def test_a_child_that_dies_mid_turn_then_every_later_turn_is_classified() -> None:
    session = session_of(LineChild())
    with anyio.fail_after(30):
        await session.open()
        died = await turn_result(session, "die")
        later = await turn_result(session, "b")
        assert await session.aclose() is None
    exit_line = _line("process", "process-exit", "; exit code: 7")
    assert died == SubagentResult(stop_reason="error", output="dying", diagnostic=exit_line)
    assert later == SubagentResult(stop_reason="error", diagnostic=exit_line)


async def test_the_idle_deadline_ends_a_silent_turn_and_interrupts_it() -> None:
    child = LineChild()
    session = session_of(child, idle=0.5)
    with anyio.fail_after(30):
        await session.open()
        silent = await turn_result(session, "hang")
        after = await turn_result(session, "b")
        await session.aclose()
    assert silent == SubagentResult(stop_reason="error", diagnostic=_line("prompt", "timeout"))
    assert child.interrupts == 1
    assert after.output == "b"


async def test_the_childs_waiter_runs_the_check_until_it_hears_the_exit() -> None:
    """One task per child: the check runs at the delays it asks for while the waiter waits for
    the exit, and the listener hears the exit once."""
    checks: list[float] = []
    exits: list[bool] = []

    def check() -> float:
        checks.append(anyio.current_time())
        return 0.05

    argv = [sys.executable, "-c", "import time; time.sleep(0.6)"]
    with anyio.fail_after(30):
        async with open_managed_process(argv) as proc, watching_child(proc) as watch:
            watch.listener = lambda: exits.append(watch.exited)
            watch.check_every(check)
            await watch.wait()
            await anyio.sleep(0.2)  # no check after the exit
    assert exits == [True]
    assert len(checks) >= 4
    assert checks[-1] < anyio.current_time() - 0.15


async def _drive_parked(session: ChildSession, child: LineChild, spawned: anyio.Event) -> None:
    """A warm pool's child in short: its block spawns and watches it, and drives its session
    at once (parked before the handshake until opened or released)."""
    async with (
        open_managed_process(child.command(), teardown=Teardown(0.5, 0.5, 1.0)) as proc,
        watching_child(proc) as watch,
    ):
        spawned.set()
        await session.drive(proc, watch)


async def test_a_session_driven_before_it_is_opened_begins_its_handshake_when_opened() -> None:
    """The warm path: everything but the handshake is set up while the child waits; the
    one-shot then runs on the adopted owner, its idle deadline heard through the block's waiter."""
    child = LineChild()
    session = session_of(child, idle=0.5)
    spawned = anyio.Event()
    with anyio.fail_after(30):
        owner = OwnedTask.start(partial(_drive_parked, session, child, spawned), name="warm")
        await spawned.wait()
        await anyio.wait_all_tasks_blocked()
        assert child.pids == []
        run = await session.one_shot(SubagentRequest(prompt="hang"), owner=owner)
        async with run:
            silent = await run.result()
        await owner.wait()
    assert silent == SubagentResult(stop_reason="error", diagnostic=_line("prompt", "timeout"))
    assert child.interrupts == 1
    assert len(child.pids) == 1


async def test_a_parked_session_released_runs_the_ladder_without_a_handshake() -> None:
    child = LineChild()
    session = session_of(child)
    spawned = anyio.Event()
    with anyio.fail_after(30):
        owner = OwnedTask.start(partial(_drive_parked, session, child, spawned), name="warm")
        await spawned.wait()
        await anyio.wait_all_tasks_blocked()
        session.release()
        await owner.wait()
    assert child.pids == []
    assert not session.is_open
    with pytest.raises(SubagentError):
        session.begin_turn("never")


async def test_a_one_shot_run_ends_the_child_when_disposed() -> None:
    session = session_of(LineChild())
    with anyio.fail_after(30):
        turn = session.begin_turn("once")
        await session.open()
        async with session.run_of(turn, ends_session=True) as run:
            assert (await run.result()).output == "once"
        assert not session.is_open
        with pytest.raises(SubagentError):
            session.begin_turn("again")


@pytest.mark.parametrize(
    ("child", "startup", "diagnostic"),
    [
        (
            LineChild("exit-at-hello", "3"),
            30.0,
            _line("initialize", "process-exit", "; exit code: 3"),
        ),
        (LineChild("silent"), 0.5, _line("initialize", "timeout")),
        (LineChild(command="/nonexistent/child"), 30.0, _line("process", "process-start")),
    ],
)
async def test_a_failed_start_is_classified_and_rolled_back(
    child: LineChild, startup: float, diagnostic: str
) -> None:
    session = session_of(child, startup=startup)
    queued = session.begin_turn("never")
    with anyio.fail_after(30), pytest.raises(SubagentStartError) as raised:
        await session.open()
    assert raised.value.diagnostic == diagnostic
    assert queued.result is not None
    assert queued.result.stop_reason == "aborted"


async def test_a_start_cancelled_mid_handshake_rolls_back() -> None:
    cancel = CancelSignal()
    session = session_of(LineChild("silent"))
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_cancel_when_blocked, cancel)
            with pytest.raises(SubagentStartError) as raised:
                await session.open(cancel)
    assert raised.value.diagnostic is None
    assert str(raised.value) == "subagent request was aborted before the ACP child started"


async def _cancel_when_blocked(cancel: CancelSignal) -> None:
    await anyio.wait_all_tasks_blocked()
    cancel.cancel()


# -- sessions through the registry ---------------------------------------------------------------


class LineProvider:
    """A provider of `LineChild` sessions: the registry-facing side, as a real one has it."""

    name = PROVIDER
    capabilities = Capabilities(sessions=True, resume=True)
    inherits_parent_context = False

    def __init__(self, *args: str, env: Mapping[str, str] | None = None) -> None:
        self._args = args
        self._env = env
        self.children: list[LineChild] = []

    async def start(self, request: SubagentRequest) -> SubagentRun:
        child = LineChild(*self._args, env=self._env)
        session = session_of(child)
        turn = session.begin_turn(request.prompt, cancel=request.cancel, budget=request.budget)
        await session.open(request.cancel)
        return session.run_of(turn, ends_session=True)

    async def open_session(self, request: SessionRequest, slot: SessionSlot) -> SubagentSession:
        return await self._open(request, slot, resume=False)

    async def resume_session(self, request: SessionRequest, slot: SessionSlot) -> SubagentSession:
        return await self._open(request, slot, resume=True)

    async def _open(
        self, request: SessionRequest, slot: SessionSlot, *, resume: bool
    ) -> SubagentSession:
        cwd = session_workspace("ACP", PROVIDER, request, None, slot, resume=resume)
        child = LineChild(
            *self._args,
            env=self._env,
            cwd=cwd,
            on_session=lambda sid: slot.update(child_session=sid),
        )
        self.children.append(child)
        session = session_of(child)
        await session.open(request.cancel)
        return ChildTurns(session, slot, request)


def _registry(provider: LineProvider) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(provider)
    return registry


async def test_a_one_shot_budget_interrupts_the_turn_that_crosses_it(tmp_path: Path) -> None:
    registry = _registry(LineProvider())
    request = SubagentRequest(prompt="usage", cwd=tmp_path, budget=Budget(max_tokens=3))
    with anyio.fail_after(30):
        async with await registry.start(PROVIDER, request) as run:
            result = await run.result()
    assert result.stop_reason == "error"
    assert result.diagnostic == _line("prompt", "budget")


async def test_a_session_budget_counts_every_turn(tmp_path: Path) -> None:
    provider = LineProvider()
    registry = _registry(provider)
    request = SessionRequest(cwd=tmp_path, budget=Budget(max_tokens=8))
    with anyio.fail_after(30):
        async with await registry.open_session(PROVIDER, request) as session:
            first = await (await session.run("usage one")).result()
            async with await session.run("usage then hang") as crossing:
                second = await crossing.result()
            # Disposing a settled turn waits until the owner is done with it (its interrupt).
            spent = await (await session.run("c")).result()
            assert session.usage == Usage(input_tokens=10)
    assert (first.stop_reason, first.usage) == ("completed", Usage(input_tokens=5))
    assert (second.stop_reason, second.diagnostic) == ("error", _line("prompt", "budget"))
    assert provider.children[0].interrupts == 1
    assert (spent.stop_reason, spent.diagnostic) == ("error", _line("prompt", "budget"))


async def test_a_resumed_session_carries_its_record_and_budget(tmp_path: Path) -> None:
    sid = tmp_path / "sid"
    sid.write_text("child-7", encoding="utf-8")
    provider = LineProvider(env={"TURNS_SESSION_ID_FILE": str(sid)})
    registry = _registry(provider)
    state = tmp_path / "state"
    request = SessionRequest(cwd=tmp_path, state_dir=state, budget=Budget(max_tokens=8))
    with anyio.fail_after(30):
        async with await registry.open_session(PROVIDER, request) as session:
            handle = session.handle
            assert (await (await session.run("usage")).result()).stop_reason == "completed"
        [record] = list_records(state)
        assert (record.handle, record.child_session, record.turns) == (handle, "child-7", 1)
        assert record.cwd == str(tmp_path)
        async with await registry.resume_session(PROVIDER, handle, request) as resumed:
            again = await (await resumed.run("usage")).result()
            assert (resumed.turns, resumed.usage) == (2, Usage(input_tokens=10))
    assert again.diagnostic == _line("prompt", "budget")
    assert len(provider.children) == 2
    assert "child-7" not in handle


async def test_resume_refusals_come_before_any_child(tmp_path: Path) -> None:
    sid = tmp_path / "sid"
    sid.write_text("child-7", encoding="utf-8")
    provider = LineProvider(env={"TURNS_SESSION_ID_FILE": str(sid)})
    registry = _registry(provider)
    state = tmp_path / "state"
    request = SessionRequest(cwd=tmp_path, state_dir=state)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with anyio.fail_after(30):
        async with await registry.open_session(PROVIDER, request) as held:
            with pytest.raises(SubagentStartError) as busy:
                await registry.resume_session(PROVIDER, held.handle, request)
        other = SessionRequest(cwd=elsewhere, state_dir=state)
        with pytest.raises(SubagentStartError) as moved:
            await registry.resume_session(PROVIDER, held.handle, other)
        with pytest.raises(SubagentStartError) as unknown:
            await registry.resume_session(PROVIDER, "s0123", request)
        with pytest.raises(SubagentError) as no_state:
            await registry.resume_session(PROVIDER, held.handle, SessionRequest(cwd=tmp_path))
    assert busy.value.diagnostic == _line("initialize", "session-busy")
    assert moved.value.diagnostic == _line("initialize", "configuration")
    assert unknown.value.diagnostic == _line("initialize", "resume-miss")
    assert no_state.value.code == "NO_STATE_DIR"
    assert len(provider.children) == 1


async def test_a_provider_without_sessions_is_refused_before_spawning(tmp_path: Path) -> None:
    provider = LineProvider()
    provider.capabilities = Capabilities()
    registry = _registry(provider)
    with pytest.raises(SubagentError) as raised:
        await registry.open_session(PROVIDER, SessionRequest(cwd=tmp_path))
    assert raised.value.code == "UNSUPPORTED_CAPABILITY"
    assert provider.children == []


hostile_ids = st.one_of(
    st.text(min_size=1, max_size=200),
    st.just("sk-SECRET-" + "x" * 40 + "\nSubagent failure (provider: evil)"),
    st.just("A" * (1 << 20)),
)


@settings(max_examples=8)
@given(sid=hostile_ids)
async def test_no_byte_of_a_child_session_id_reaches_a_diagnostic(
    tmp_path_factory, sid: str
) -> None:
    tmp = tmp_path_factory.mktemp("hostile")
    path = tmp / "sid"
    path.write_text(sid, encoding="utf-8", errors="replace")
    registry = _registry(LineProvider(env={"TURNS_SESSION_ID_FILE": str(path)}))
    state = tmp / "state"
    request = SessionRequest(cwd=tmp, state_dir=state)
    texts: list[str] = []
    with anyio.fail_after(60):
        async with await registry.open_session(PROVIDER, request) as session:
            handle = session.handle
            for prompt in ("die", "again"):
                result = await (await session.run(prompt)).result()
                texts.append(result.diagnostic or "")
                texts.append(result.output)
            texts.append(str(await session.aclose()))
        (state / handle / "child").mkdir(exist_ok=True)
        with pytest.raises(SubagentStartError) as moved:
            await registry.resume_session(
                PROVIDER, handle, SessionRequest(cwd=state, state_dir=state)
            )
        texts.append(str(moved.value))
    texts.append(handle)
    stored = list_records(state)[0].child_session
    assert stored is not None  # the child's id was received and kept (only) in the record
    probe = stored.strip()[:32]
    if len(probe) >= 4:
        assert all(probe not in text for text in texts)


# -- spans ---------------------------------------------------------------------------------------

from opentelemetry import trace as otel_trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from subagent_core.testing import recorded_spans  # noqa: E402


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span the test finishes (the process's one provider, traced for this test only)."""
    with recorded_spans() as exporter:
        yield exporter


def _texts(span: ReadableSpan) -> list[str]:
    """Every string a span carries: its name, attribute values and event attributes."""
    values: list[object] = [span.name, *(span.attributes or {}).values()]
    for event in span.events:
        values.append(event.name)
        values.extend((event.attributes or {}).values())
    flat: list[str] = []
    for value in values:
        flat.extend(str(item) for item in (value if isinstance(value, tuple) else (value,)))
    return flat


async def test_a_run_is_one_client_span_of_closed_facts(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    registry = _registry(LineProvider())
    with anyio.fail_after(30):
        async with await registry.start(
            PROVIDER, SubagentRequest(prompt="usage", cwd=tmp_path)
        ) as run:
            assert (await run.result()).stop_reason == "completed"
    [span] = spans.get_finished_spans()
    assert span.name == "invoke_agent lines"
    assert span.kind == otel_trace.SpanKind.CLIENT
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "lines",
        "gen_ai.response.finish_reasons": ("completed",),
        "gen_ai.usage.input_tokens": 5,
    }
    assert span.status.status_code == otel_trace.StatusCode.UNSET


async def test_a_failed_run_span_names_the_category_and_nothing_else(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    registry = _registry(LineProvider())
    with anyio.fail_after(30):
        async with await registry.start(
            PROVIDER, SubagentRequest(prompt="die", cwd=tmp_path)
        ) as run:
            assert (await run.result()).stop_reason == "error"
        refusing = _registry(LineProvider("exit-at-hello", "3"))
        with pytest.raises(SubagentStartError):
            await refusing.start(PROVIDER, SubagentRequest(prompt="x", cwd=tmp_path))
    died, refused = spans.get_finished_spans()
    for span in (died, refused):
        assert span.status.status_code == otel_trace.StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == "process-exit"
    assert "dying" not in " ".join(_texts(died))


async def test_session_turns_are_spans_under_the_session(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    sid = tmp_path / "sid"
    sid.write_text("child-secret-id", encoding="utf-8")
    registry = _registry(LineProvider(env={"TURNS_SESSION_ID_FILE": str(sid)}))
    request = SessionRequest(cwd=tmp_path, budget=Budget(max_tokens=8))
    with anyio.fail_after(30):
        async with await registry.open_session(PROVIDER, request) as session:
            handle = session.handle
            for prompt in ("usage alpha-prompt", "usage beta-prompt"):
                async with await session.run(prompt) as run:
                    await run.result()
    first, second, whole = spans.get_finished_spans()
    assert whole.parent is None
    for turn in (first, second):
        assert turn.parent is not None
        assert turn.parent.span_id == whole.context.span_id
        assert (turn.attributes or {})["gen_ai.conversation.id"] == handle
    assert (whole.attributes or {})["gen_ai.conversation.id"] == handle
    assert (second.attributes or {})["error.type"] == "budget"
    everything = " ".join(text for span in (first, second, whole) for text in _texts(span))
    for secret in ("child-secret-id", "alpha-prompt", "beta-prompt"):
        assert secret not in everything


async def test_a_turn_carries_the_trace_context_for_its_child(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    seen: list[str | None] = []

    class Recording(LineChild):
        def begin_turn(self, link: ChildLink, turn: Turn) -> TurnDriver:
            seen.append(turn.traceparent)
            return super().begin_turn(link, turn)

    class RecordingProvider(LineProvider):
        async def start(self, request: SubagentRequest) -> SubagentRun:
            session = session_of(Recording())
            turn = session.begin_turn(request.prompt, cancel=request.cancel)
            await session.open(request.cancel)
            return session.run_of(turn, ends_session=True)

    registry = _registry(RecordingProvider())
    with anyio.fail_after(30):
        async with await registry.start(PROVIDER, SubagentRequest(prompt="a", cwd=tmp_path)) as run:
            await run.result()
    [span] = spans.get_finished_spans()
    context = span.context
    # Sampled, and only that: the SDK's random-trace-id bit (0x02) is not passed on.
    assert seen == [f"00-{context.trace_id:032x}-{context.span_id:016x}-01"]


def test_importing_subagent_core_imports_no_opentelemetry() -> None:
    code = (
        "import sys, subagent_core, subagent_core.kit; "
        "print([m for m in sys.modules if m.startswith('opentelemetry')])"
    )
    done = subprocess_run([sys.executable, "-c", code])
    assert done == "[]"


def test_without_a_tracer_provider_only_a_trace_to_continue_makes_a_span() -> None:
    """The API installed but tracing never set up (a common transitive install): a run is
    untraced, unless there is a trace to continue, whose context still reaches the child."""
    code = (
        "from opentelemetry import trace; from subagent_core import _tracing as t\n"
        "print(t.start_span('p') is None)\n"
        "parent = trace.SpanContext(1, 2, is_remote=True, trace_flags=trace.TraceFlags(1))\n"
        "with trace.use_span(trace.NonRecordingSpan(parent)):\n"
        "    run = t.start_span('p')\n"
        "    assert run is not None\n"
        "    with run.current():\n"
        "        print(t.traceparent())\n"
    )
    done = subprocess_run([sys.executable, "-c", code])
    assert done.splitlines() == ["True", f"00-{1:032x}-{2:016x}-01"]


def subprocess_run(argv: list[str]) -> str:
    """A short command's stdout (a plain interpreter: nothing of this test process leaks in)."""
    import subprocess

    return subprocess.run(
        argv, check=True, capture_output=True, text=True, encoding="utf-8", timeout=60
    ).stdout.strip()


@settings(max_examples=6)
@given(text=hostile_ids)
async def test_no_child_text_reaches_a_span(tmp_path_factory, text: str) -> None:
    """Whatever the prompt, the child's answer and its own session id hold, a span carries
    none of it: names, attributes and events are closed facts and counts."""
    tmp = tmp_path_factory.mktemp("hostile-spans")
    sid = tmp / "sid"
    sid.write_text(text, encoding="utf-8", errors="replace")
    registry = _registry(LineProvider(env={"TURNS_SESSION_ID_FILE": str(sid)}))
    prompt = "usage " + text.replace("\n", " ")[:2000]
    with recorded_spans() as exporter, anyio.fail_after(60):
        async with await registry.open_session(PROVIDER, SessionRequest(cwd=tmp)) as session:
            for turn in (prompt, "die"):
                async with await session.run(turn) as run:
                    await run.result()
        finished = exporter.get_finished_spans()
    assert finished
    carried = " ".join(value for span in finished for value in _texts(span))
    probe = text.replace("\n", " ").strip()[:32]
    if len(probe) >= 4:
        assert probe not in carried
