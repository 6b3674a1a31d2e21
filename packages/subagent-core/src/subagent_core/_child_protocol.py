"""What a provider writes for the lifecycle (`ChildProtocol`) and what its hooks see (`ChildLink`).

A provider's protocol is a handful of hooks the owner task calls — `handshake`, `begin_turn`
(a `TurnDriver` per turn), `close_child` — plus its closed mapping tables. The hooks never
race deadlines, cancels or the child's exit themselves: the lifecycle runs each inside a scope
those cancel, and classifies what stopped it. A hook that has classified a failure itself (an
error answer, a lost wire) raises `ChildFailure` with closed facts.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Coroutine
from typing import Any, Final

import anyio
import anyio.abc

from ._child_watch import ChildWatch
from ._command import ChildCommand
from ._diagnostics import FailureCategory
from ._errors import ChildKind
from ._failure import Failure
from ._process import ManagedProcess, ProcessOutcome, StderrMode
from ._stderr_log import ChildStderr
from ._turn import Turn, TurnDriver

OUTCOME_WAIT_SECONDS: Final = 1.0
"""How long a lost wire waits for the process outcome before it is classified, and how long a
call may still finish after the leader exited (a reply written just before exiting)."""

INTERRUPT_SECONDS: Final = 1.0
"""Bound on a turn's best-effort interrupt (a child not reading stdin blocks the write)."""

CLOSE_SECONDS: Final = 1.0
"""Bound on the provider's polite goodbye before the ladder."""


class ChildFailure(Exception):
    """Raised by a hook for a failure the provider classified; carries closed facts only."""

    def __init__(self, failure: Failure) -> None:
        super().__init__("the child failed")
        self.failure = failure


class ChildLink:
    """What a provider's hooks see of the child: the process, the services, the clocks."""

    def __init__(
        self,
        current_turn: Callable[[], Turn | None],
        proc: ManagedProcess,
        services: anyio.abc.TaskGroup,
        watch: ChildWatch,
        *,
        exit_category: FailureCategory = "process-exit",
    ) -> None:
        self._current_turn = current_turn
        self.proc = proc
        self._services = services
        self._exit = watch
        self._exit_category: FailureCategory = exit_category
        self.stage = "initialize"
        """The provider's current handshake stage: a startup timeout or exit names it."""
        self.eof_sent_at: float | None = None
        """When `close_stdin` sent EOF: the ladder's EOF grace counts from there."""

    def start_soon(self, function: Callable[..., Coroutine[Any, Any, Any]], *args: object) -> None:
        """Starts a service task (a reader, a permission worker) that lives until the ladder
        has ended the child; it must turn expected failures into facts itself."""
        self._services.start_soon(function, *args)

    @property
    def turn(self) -> Turn | None:
        """The turn the owner is running now, if any (service tasks report into it)."""
        return self._current_turn()

    def touch(self) -> None:
        """Records that the child said something: the running turn's idle clock restarts."""
        turn = self._current_turn()
        if turn is not None:
            turn.idle.touch()

    @property
    def exited(self) -> bool:
        """True once the leader's exit was observed."""
        return self._exit.exited

    @property
    def outcome(self) -> ProcessOutcome | None:
        """The leader's outcome, once observed."""
        return self.proc.outcome

    async def wait_exit(self, seconds: float = OUTCOME_WAIT_SECONDS) -> bool:
        """Waits at most `seconds` for the leader's exit; True when it has exited."""
        with anyio.move_on_after(seconds):
            await self._exit.wait()
        return self.exited

    def exit_failure(self, stage: str) -> Failure:
        """The protocol's exit category (`process-exit` unless it names another) at `stage`,
        with the observed outcome (a turn's stage is the protocol's `exit_stage`)."""
        return Failure(stage, self._exit_category, outcome=self.proc.outcome)

    async def close_stdin(self) -> None:
        """Sends EOF as part of a goodbye (one that asks the child to exit and closes stdin
        right behind it); the ladder's EOF grace then runs from here, not again in full."""
        if self.eof_sent_at is None:
            self.eof_sent_at = anyio.current_time()
        await self.proc.close_stdin()


class ChildProtocol(abc.ABC):
    """A provider's protocol, as the hooks the lifecycle calls from the owner task.

    `kind` names the provider in the fixed start sentences; `stderr` says what becomes of the
    child's stderr (never passed through to the parent's by default).
    """

    kind: ChildKind
    stderr: StderrMode | ChildStderr = "devnull"
    turn_stage: str = "prompt"
    """The stage a turn's failures name (a process exit during a turn is `exit_stage`)."""

    # The shared vocabulary of the lifecycle's own failures; a protocol whose closed facts
    # name them otherwise (the SDK's) says so here.
    spawn_failure: Failure = Failure("process", "process-start")
    """A command that cannot be spawned (a workspace gone since it was checked is always
    `initialize` / `configuration`)."""
    exit_stage: str = "process"
    """The stage of a process exit during a turn."""
    exit_category: FailureCategory = "process-exit"
    """The category of a process exit (at any stage, with the observed figures)."""
    teardown_stage: str = "teardown"
    """The stage of the line reported when the tree is not confirmed gone."""
    close_seconds: float = CLOSE_SECONDS
    """Bound on `close_child` (a protocol whose goodbye has a configured bound sets it)."""

    @abc.abstractmethod
    def command(self) -> ChildCommand:
        """The child's command (its placement included)."""

    @abc.abstractmethod
    async def handshake(self, link: ChildLink) -> None:
        """Brings the child to where it takes a prompt; updates `link.stage` as it goes.

        Raises:
            ChildFailure: the child refused or broke the handshake.
        """

    @abc.abstractmethod
    def begin_turn(self, link: ChildLink, turn: Turn) -> TurnDriver:
        """The driver of `turn` (called in the owner, right before it runs)."""

    async def close_child(self, link: ChildLink) -> None:  # noqa: B027 - optional hook
        """A polite goodbye before the ladder (bounded and shielded by the kit)."""

    def reading(self) -> bool:
        """Whether a service task of the provider still drains stdout (else the ladder does)."""
        return False
