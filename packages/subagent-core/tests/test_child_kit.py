"""What every provider over the kit shares: its config's bounds and checks, its registry face,
its warm pool, its pipes, and the usage event of its totals.

The providers' own suites run all of it against real children; these tests pin the shared
rules themselves, with no process unless the rule is about one.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc
import pytest
from subagent_core import (
    CancelSignal,
    Capabilities,
    Cost,
    MCPStdioServerSpec,
    Placement,
    SessionRequest,
    SSHRemote,
    SubagentError,
    SubagentRequest,
    SubagentRun,
    SubagentStartError,
    Usage,
    UsageEvent,
)
from subagent_core.kit import (
    ChildBounds,
    ChildCommand,
    ChildLink,
    ChildPipes,
    ChildProtocol,
    ChildProvider,
    ChildSession,
    ChildTurns,
    Closing,
    FrameTooLargeError,
    OwnedTask,
    SessionSlot,
    Teardown,
    Turn,
    TurnDriver,
    WarmPool,
    check_child_config,
)

OWNER = "SomeConfig"


@dataclass(frozen=True, slots=True, kw_only=True)
class SomeConfig(ChildBounds):
    """A provider's config over the shared bounds, checked the shared way."""

    command: str | None = None
    args: tuple[str, ...] = ()
    provider_name: str = "some"
    cwd: Path | str | None = None
    env: dict[str, str | None] = field(default_factory=dict[str, str | None])
    shutdown_timeout_seconds: float = 1.0
    prewarm: int = 0
    otel_passthrough: bool = False
    remote: Placement | None = None

    def __post_init__(self) -> None:
        check_child_config(
            self,
            OWNER,
            default_command="some-cli",
            existing_cwd=False,
            seconds=("shutdown_timeout_seconds",),
        )


def test_the_bounds_are_declared_once_with_their_defaults() -> None:
    config = SomeConfig()
    assert (
        config.dispose_eof_grace_seconds,
        config.dispose_grace_seconds,
        config.dispose_kill_grace_seconds,
        config.max_frame_bytes,
        config.max_output_bytes,
        config.write_timeout_seconds,
        config.startup_timeout_seconds,
        config.idle_timeout_seconds,
    ) == (0.5, 0.5, 3.0, 16 * 1024 * 1024, 8 * 1024 * 1024, 10.0, 60.0, 1800.0)
    assert config.teardown == Teardown(0.5, 0.5, 3.0)
    assert SomeConfig(dispose_grace_seconds=2).dispose_grace_seconds == 2.0


def test_a_command_found_at_each_start_is_checked_as_the_default_and_stays_none() -> None:
    assert SomeConfig().command is None
    assert SomeConfig(command="cli").command == "cli"
    with pytest.raises(ValueError, match=r"^SomeConfig\.args "):
        SomeConfig(args=("nul\x00",))


def test_a_cwd_need_not_exist_when_the_provider_says_so(tmp_path: Path) -> None:
    assert SomeConfig(cwd=tmp_path / "later").cwd == tmp_path / "later"


@pytest.mark.parametrize(
    ("key", "value", "requirement"),
    [
        ("shutdown_timeout_seconds", 0, "must be positive and finite"),
        ("shutdown_timeout_seconds", "1", "must be a number of seconds"),
        ("write_timeout_seconds", math.inf, "must be positive and finite"),
        ("prewarm", -1, "must be an int from 0 to 64"),
        ("prewarm", 65, "must be an int from 0 to 64"),
        ("prewarm", True, "must be an int from 0 to 64"),
        ("max_frame_bytes", 0, "must be a positive int"),
        ("provider_name", "has space", "must be 1-64 letters"),
        ("otel_passthrough", "yes", "must be True or False$"),
        ("otel_passthrough", 1, "must be True or False$"),
    ],
)
def test_a_bad_shared_field_names_its_key(key: str, value: object, requirement: str) -> None:
    with pytest.raises(ValueError, match=rf"^SomeConfig\.{key} {requirement}"):
        SomeConfig(**{key: value})  # type: ignore[arg-type]


def test_a_configured_cwd_must_exist_by_default() -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class StrictConfig(ChildBounds):
        command: str = "cli"
        args: tuple[str, ...] = ()
        provider_name: str = "strict"
        cwd: Path | None = None
        env: dict[str, str | None] = field(default_factory=dict[str, str | None])
        remote: Placement | None = None

        def __post_init__(self) -> None:
            check_child_config(self, "StrictConfig")

    with pytest.raises(ValueError, match=r"^StrictConfig\.cwd must be an existing directory"):
        StrictConfig(cwd=Path("/definitely/not/here"))


def test_the_usage_event_of_totals_and_back() -> None:
    usage = Usage(input_tokens=3, output_tokens=2, cached_input_tokens=1, cost=Cost(0.5, "USD"))
    event = UsageEvent.of(usage)
    assert event == UsageEvent(
        input_tokens=3, output_tokens=2, cached_input_tokens=1, cost=Cost(0.5, "USD")
    )
    assert event.usage == usage
    assert UsageEvent(input_tokens=-1).usage == Usage()  # counts as the event normalised them


class _Pipeless(ChildProtocol):
    kind = "ACP"

    def command(self) -> ChildCommand:
        raise AssertionError("nothing is spawned")

    async def handshake(self, link: ChildLink) -> None:
        raise AssertionError("nothing is driven")

    def begin_turn(self, link: ChildLink, turn: Turn) -> TurnDriver:
        raise AssertionError("nothing is driven")


class SomeProvider(ChildProvider[SomeConfig]):
    kind = "ACP"
    takes_mcp_servers = False
    offered = Capabilities(sessions=True, resume=True)

    async def start(self, request: SubagentRequest) -> SubagentRun:
        raise AssertionError("not started here")

    async def open_turns(
        self, request: SessionRequest, slot: SessionSlot, *, resume: bool
    ) -> ChildTurns:
        raise AssertionError("not opened here")


async def test_the_registry_face_drops_resume_for_a_placed_child() -> None:
    provider = SomeProvider(SomeConfig())
    assert (provider.name, provider.inherits_parent_context) == ("some", False)
    assert provider.capabilities == Capabilities(sessions=True, resume=True)

    placed = SomeProvider(SomeConfig(remote=SSHRemote(destination="me@build1")))
    assert placed.capabilities == Capabilities(sessions=True)
    with pytest.raises(SubagentError) as refused:
        await placed.resume_session(SessionRequest(), None)  # type: ignore[arg-type]
    assert refused.value.code == "UNSUPPORTED_CAPABILITY"


def test_a_child_that_takes_no_mcp_servers_refuses_them_before_anything_runs(
    tmp_path: Path,
) -> None:
    provider = SomeProvider(SomeConfig())
    assert provider.workspace_for(SubagentRequest(prompt="p", cwd=tmp_path)) == tmp_path
    server = MCPStdioServerSpec(name="tools", command="tools")
    with pytest.raises(SubagentStartError) as refused:
        provider.workspace_for(SubagentRequest(prompt="p", cwd=tmp_path, mcp_servers=(server,)))
    assert "stage: initialize; category: configuration" in str(refused.value)


async def test_an_adopting_owner_that_already_ended_fails_the_start() -> None:
    async def nothing() -> None:
        return None

    owner = OwnedTask.start(nothing, name="ended owner")
    await owner.wait()
    session = ChildSession.configured(
        _Pipeless(), SomeConfig(), permission_protocol="ACP", log=logging.getLogger("test")
    )
    with anyio.fail_after(5), pytest.raises(SubagentStartError):
        await session.one_shot(SubagentRequest(prompt="p", cancel=CancelSignal()), owner=owner)


@dataclass
class _Warm:
    """A stand-in warm child: idle once `ready()`, its task ends when retired."""

    cwd: Path
    pool: WarmPool[_Warm]
    claimed: bool = False
    prepared: bool = False
    retired: bool = False
    gone: anyio.Event = field(default_factory=anyio.Event)
    task: OwnedTask = field(init=False)

    def __post_init__(self) -> None:
        self.task = OwnedTask.start(self._own, name="warm stand-in")

    @property
    def idle(self) -> bool:
        return self.prepared and not self.claimed and not self.retired and not self.task.done

    def ready(self) -> None:
        self.prepared = True
        self.pool.changed()

    def retire(self) -> None:
        self.retired = True
        self.gone.set()

    async def _own(self) -> None:
        try:
            await self.gone.wait()
        finally:
            self.pool.ended(self)


async def test_a_warm_pool_keeps_its_size_for_one_cwd_and_moves_with_the_requests(
    tmp_path: Path,
) -> None:
    started: list[_Warm] = []

    def start(pool: WarmPool[_Warm], cwd: Path) -> _Warm:
        child = _Warm(cwd, pool)
        started.append(child)
        return child

    pool = WarmPool(2, None, start)
    with anyio.fail_after(5):
        assert pool.take(tmp_path) is None  # nothing ready: the pool fills for this cwd
        assert pool.population == 2
        for child in started:
            child.ready()
        found = pool.take(tmp_path)
        assert found is not None
        assert found.cwd == tmp_path
        found.claimed = True
        pool.refill()
        assert (pool.population, len(started)) == (2, 3)
        other = tmp_path / "other"
        assert pool.take(other) is None  # another cwd: the unclaimed ones retire
        assert all(child.retired for child in started if not child.claimed)
        await anyio.wait_all_tasks_blocked()
        assert {child.cwd for child in started[3:]} == {other}
        await pool.aclose()
        assert pool.take(other) is None
        found.retire()
        await found.task.wait()


async def test_a_pool_without_a_size_never_starts_a_child(tmp_path: Path) -> None:
    def start(pool: WarmPool[_Warm], cwd: Path) -> _Warm:
        raise AssertionError("no child for a pool of size 0")

    pool = WarmPool(0, tmp_path, start)
    with anyio.fail_after(5):
        await pool.warm_up(None)
        assert pool.take(tmp_path) is None
        assert pool.population == 0
        await pool.aclose()


class _Once(anyio.abc.ByteReceiveStream):
    """Stdout that says one thing, then ends."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data, self._data = self._data, b""
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        return None


@dataclass
class _Proc:
    stdin: object = None
    stdout: object = None


async def test_the_pipes_carry_the_bounds_and_read_bounded_lines() -> None:
    with pytest.raises(RuntimeError):
        ChildPipes.of(_Proc(), SomeConfig())  # type: ignore[arg-type]
    proc = _Proc(stdin=object(), stdout=_Once(b"short\n" + b"x" * 64 + b"\n"))
    pipes = ChildPipes.of(proc, SomeConfig(max_frame_bytes=8, write_timeout_seconds=2))  # type: ignore[arg-type]
    assert (pipes.max_frame_bytes, pipes.write_timeout_seconds) == (8, 2.0)
    lines = pipes.lines()
    with anyio.fail_after(5):
        assert await lines.receive_line() == b"short"
        with pytest.raises(FrameTooLargeError):
            await lines.receive_line()


def test_closing_closes_on_leaving_with() -> None:
    class Thing(Closing):
        closed = False

        def close(self) -> None:
            self.closed = True

    with Thing() as thing:
        assert not thing.closed
    assert thing.closed
