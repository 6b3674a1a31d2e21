"""The provider protocol and the run handle every provider returns."""

from __future__ import annotations

import abc
import uuid
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

import anyio

from ._events import EventBuffer, SubagentEvent
from ._types import Capabilities, SubagentRequest, SubagentResult


def new_run_id() -> str:
    """A fresh id in the parent's namespace; never the child's own session id."""
    return str(uuid.uuid4())


class SubagentRun(abc.ABC):
    """One published child. The holder must dispose it; `async with run:` does so on every path.

    `result()` never raises for child-level failure. `dispose()` is idempotent and memoized,
    settles a pending result as `aborted`, tears the child down, and returns `None` when the
    process tree is confirmed gone or the safe teardown line when it is not.

    A provider that reports activity sets `self._events = EventBuffer()`, publishes into it
    while the child runs, and closes it when the run settles (dispose included).
    """

    id: str
    _events: EventBuffer | None = None
    """The run's activity buffer; `None` for a provider that publishes nothing."""

    @abc.abstractmethod
    async def result(self) -> SubagentResult:
        """Waits for the run's result."""

    @abc.abstractmethod
    async def dispose(self) -> str | None:
        """Tears the child down (memoized); never raises for a cleanup failure."""

    def events(self) -> AsyncIterator[SubagentEvent]:
        """The run's activity as it happens, ending when the run settles.

        Optional to consume: unread events cost a bounded buffer and nothing else, and the
        result is the same either way. `text`, `title`, `call_id` and plan entries are
        child-controlled: show them to a human or log them, never put them in a model-visible
        result or a diagnostic. For a run that publishes nothing, the iterator waits for the
        result and ends.
        """
        if self._events is not None:
            return self._events.events()
        return _nothing_until(self)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # A cancelled holder must still not leak the child: dispose bounds every step itself.
        with anyio.CancelScope(shield=True):
            await self.dispose()


async def _nothing_until(run: SubagentRun) -> AsyncIterator[SubagentEvent]:
    await run.result()
    return
    yield  # an async generator that yields nothing


@runtime_checkable
class SubagentProvider(Protocol):
    """A named way of running children."""

    @property
    def name(self) -> str:
        """The registry name; also the `provider:` field of diagnostics."""
        ...

    @property
    def capabilities(self) -> Capabilities:
        """Which gated request fields this provider honours."""
        ...

    @property
    def inherits_parent_context(self) -> bool:
        """Whether the child sees the parent's conversation (descriptive only)."""
        ...

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Starts a child and returns once it is ready.

        Raises:
            SubagentStartError: the child could not start; everything was rolled back first.
        """
        ...


@runtime_checkable
class ClosableProvider(SubagentProvider, Protocol):
    """A provider that owns resources beyond its runs (for example pre-spawned children).

    `aclose()` releases them (every warm child's tree gone) and leaves published runs alone:
    they stay with their holders. It is idempotent, bounds every step itself and never raises
    for a cleanup failure; the registry calls it shielded from cancellation.
    """

    async def aclose(self) -> None:
        """Releases what the provider holds; published runs are not affected."""
        ...
