"""Named providers, the checks made before any spawn, and the shared settlement boundary."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Generator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial

import anyio

from ._cancel import CancelSignal
from ._closing import AsyncClosing
from ._diagnostics import FailureCategory, bound_diagnostic, failure_line
from ._errors import SubagentError, SubagentStartError
from ._events import SubagentEvent
from ._owned_task import LoopHome
from ._run import ClosableProvider, SubagentProvider, SubagentRun
from ._session import SessionProvider, SubagentSession
from ._session_store import SessionBusyError, claim_slot, new_slot
from ._tracing import RunTrace, provider_facts, start_span
from ._types import (
    Capabilities,
    RunInfo,
    SessionRequest,
    SubagentRequest,
    SubagentResult,
    Usage,
)

_log = logging.getLogger("subagent_core")

StartObserver = Callable[[RunInfo], None]
EndObserver = Callable[[RunInfo, str], None]

# (request field, Capabilities field), in the order the registry checks them.
_GATED_FIELDS: tuple[tuple[str, str], ...] = (
    ("output_schema", "output_schema"),
    ("max_depth", "depth_limit"),
    ("tool_filter", "tool_filter"),
    ("persona", "persona"),
)


class SubagentRegistry(AsyncClosing):
    """Holds providers by name and starts runs through them.

    Every run it publishes is wrapped so that `result().diagnostic`, the text `dispose()`
    returns, and every `SubagentStartError` pass `bound_diagnostic()`, whatever the provider.

    `async with registry:` (or `await registry.aclose()`) unregisters every provider and closes
    the closable ones (`ClosableProvider`), so pre-spawned children do not outlive it.
    """

    def __init__(
        self,
        on_start: StartObserver | None = None,
        on_end: EndObserver | None = None,
    ) -> None:
        self._providers: dict[str, SubagentProvider] = {}
        self._homes: dict[str, LoopHome] = {}
        """Per provider name, the loop its runs (and so its warm children) were started on."""
        self._on_start = on_start
        self._on_end = on_end

    def register(self, provider: SubagentProvider) -> Callable[[], None]:
        """Adds a provider; returns the function that unregisters exactly this provider.

        The function blocks new starts at once and, for a `ClosableProvider`, starts its close
        in the background (the rules are in the package README, "Closing"): a pool of
        pre-spawned children does not outlive the registration. Published runs are not
        affected. `await unregister_and_close(name)` does the same and waits for the close.

        Raises:
            SubagentError: `DUPLICATE_PROVIDER` when the name is taken.
        """
        name = provider.name
        if name in self._providers:
            raise SubagentError(
                "DUPLICATE_PROVIDER", f'a subagent provider named "{name}" is already registered'
            )
        self._providers[name] = provider
        home = LoopHome()
        home.note()
        self._homes[name] = home

        def unregister() -> None:
            if self._providers.get(name) is provider:
                del self._providers[name]
                self._homes.pop(name, None)
                _close_soon(provider, home)

        return unregister

    async def unregister_and_close(self, name: str) -> bool:
        """Unregisters the provider named `name` and closes it if it is closable.

        Returns False when no provider has that name. Runs already published stay with their
        holders. The close is shielded: a cancelled caller still releases the provider's
        resources (the provider bounds its own close).
        """
        provider = self._providers.pop(name, None)
        if provider is None:
            return False
        self._homes.pop(name, None)
        await _close(provider)
        return True

    async def aclose(self) -> None:
        """Unregisters every provider and closes the closable ones, newest first.

        A provider whose close raises is logged; the others are still closed. The registry
        stays usable: providers may be registered again.
        """
        while self._providers:
            name = next(reversed(self._providers))
            await self.unregister_and_close(name)

    def names(self) -> list[str]:
        """Provider names in registration order."""
        return list(self._providers)

    def get(self, name: str) -> SubagentProvider | None:
        """The provider registered under `name`, or `None`."""
        return self._providers.get(name)

    async def start(self, name: str, request: SubagentRequest) -> SubagentRun:
        """Checks the request, then starts a child through the named provider.

        Raises:
            SubagentError: `NO_PROVIDER` or `UNSUPPORTED_CAPABILITY`, before anything is spawned.
            ValueError: `max_depth` is not a non-negative int.
            SubagentStartError: the provider could not start the child (text bounded).
        """
        provider = self._checked(name, request)
        trace = start_span(name, **provider_facts(provider))
        try:
            with _tracing(trace):
                inner = await provider.start(request)
        except SubagentStartError as error:
            bounded = _bounded_start_error(error)
            if trace is not None:
                trace.end(start_error=bounded.diagnostic or "")
            raise bounded from error
        except BaseException:
            if trace is not None:
                trace.end(start_error="")
            raise
        return self._settled(inner, name, request.label, trace)

    async def open_session(self, name: str, request: SessionRequest) -> SubagentSession:
        """Starts a child for several turns through the named provider.

        With `request.state_dir` the session is kept there under its `handle` and can be
        resumed after this process exits (`resume_session`).

        Raises:
            SubagentError: `NO_PROVIDER` or `UNSUPPORTED_CAPABILITY` (the provider has no
                sessions, or a gated field), before anything is spawned.
            SubagentStartError: the child could not start (text bounded).
        """
        provider = self._session_provider(name, request, "sessions")
        # A session that cannot be resumed keeps nothing on disk, so no handle promises one.
        state_dir = request.state_dir if provider.capabilities.resume else None
        try:
            slot = new_slot(state_dir, name, request.label)
        except (OSError, SessionBusyError) as error:
            raise _start_error(name, "configuration") from error
        trace = start_span(name, conversation=slot.handle, **provider_facts(provider))
        try:
            with _tracing(trace):
                inner = await provider.open_session(request, slot)
        except BaseException as error:
            slot.discard()
            raise _failed_session_start(error, trace) from error
        return _SettledSession(inner, self, provider, request.label, trace)

    async def resume_session(
        self, name: str, handle: str, request: SessionRequest
    ) -> SubagentSession:
        """Continues the session `handle` (kept under `request.state_dir`) in a fresh child.

        Raises:
            SubagentError: `NO_PROVIDER`, `UNSUPPORTED_CAPABILITY` (no resume, or a gated
                field), or `NO_STATE_DIR`, before anything is spawned.
            SubagentStartError: `session-busy` when a live session holds the handle,
                `resume-miss` when no such session is kept or the child no longer knows it,
                `configuration` for another provider's handle or another workspace.
        """
        provider = self._session_provider(name, request, "resume")
        if request.state_dir is None:
            raise SubagentError("NO_STATE_DIR", "resuming a session needs its state_dir")
        try:
            slot = claim_slot(request.state_dir, handle)
        except SessionBusyError as error:
            raise _start_error(name, "session-busy") from error
        except OSError as error:
            raise _start_error(name, "configuration") from error
        if slot is None:
            raise _start_error(name, "resume-miss")
        if slot.record.provider != name:
            slot.release()
            raise _start_error(name, "configuration")
        trace = start_span(name, conversation=handle, **provider_facts(provider))
        try:
            with _tracing(trace):
                inner = await provider.resume_session(request, slot)
        except BaseException as error:
            slot.release()
            raise _failed_session_start(error, trace) from error
        return _SettledSession(inner, self, provider, request.label, trace)

    def _checked(self, name: str, request: SubagentRequest) -> SubagentProvider:
        """The named provider, once the request passed the checks made before any spawn."""
        provider = self._providers.get(name)
        if provider is None:
            raise SubagentError("NO_PROVIDER", f'no subagent provider registered for "{name}"')
        check_capabilities(name, provider.capabilities, request)
        home = self._homes.get(name)
        if home is not None:
            home.note()
        if request.max_depth is not None and (
            isinstance(request.max_depth, bool)
            or not isinstance(request.max_depth, int)  # pyright: ignore[reportUnnecessaryIsInstance]
            or request.max_depth < 0
        ):
            raise ValueError("max_depth must be a non-negative int")
        return provider

    def _session_provider(
        self, name: str, request: SessionRequest, capability: str
    ) -> SessionProvider:
        provider = self._checked(name, request.turn_request(""))
        if not isinstance(provider, SessionProvider) or not getattr(
            provider.capabilities, capability
        ):
            raise _unsupported(name, capability)
        return provider

    def _settled(
        self, inner: SubagentRun, name: str, label: str | None, trace: RunTrace | None
    ) -> SubagentRun:
        run = _SettledRun(inner, RunInfo(inner.id, name, label), self._on_end, trace)
        _notify(self._on_start, run.info)
        return run


def check_capabilities(name: str, capabilities: Capabilities, request: SubagentRequest) -> None:
    """Refuses the first requested gated field the provider lacks, in the fixed order."""
    for field, capability in _GATED_FIELDS:
        if getattr(request, field) is not None and not getattr(capabilities, capability):
            raise _unsupported(name, capability)


def _unsupported(name: str, capability: str) -> SubagentError:
    return SubagentError(
        "UNSUPPORTED_CAPABILITY",
        f'subagent provider "{name}" does not support the "{capability}" capability',
    )


def _start_error(name: str, category: FailureCategory) -> SubagentStartError:
    """A session start refused before any child ran, as its safe line."""
    line = failure_line(name, "initialize", category)
    return SubagentStartError(line, line)


async def _close(provider: SubagentProvider) -> None:
    if not isinstance(provider, ClosableProvider):
        return
    with anyio.CancelScope(shield=True):
        try:
            await provider.aclose()
        except Exception:
            _log.exception("closing subagent provider %r raised", provider.name)


def _close_soon(provider: SubagentProvider, home: LoopHome) -> None:
    """Starts closing an unregistered closable provider without waiting (sync callers)."""
    if not isinstance(provider, ClosableProvider):
        return
    if not home.start_soon(partial(_close, provider), name="subagent_core.registry.close"):
        _log.info(
            "unregistered provider %r: no running event loop can close it; "
            "use `await registry.unregister_and_close(name)` inside the loop",
            provider.name,
        )


def _bounded_start_error(error: SubagentStartError) -> SubagentStartError:
    diagnostic = None if error.diagnostic is None else bound_diagnostic(error.diagnostic)
    bounded = SubagentStartError(bound_diagnostic(error.message), diagnostic)
    return bounded


@contextmanager
def _tracing(trace: RunTrace | None) -> Generator[None]:
    """`trace` current while a provider starts its child (a no-op untraced)."""
    if trace is None:
        yield
        return
    with trace.current():
        yield


def _failed_session_start(error: BaseException, trace: RunTrace | None) -> BaseException:
    """The error a failed session start raises (start errors bounded), its span ended."""
    if isinstance(error, SubagentStartError):
        bounded = _bounded_start_error(error)
        if trace is not None:
            trace.end(start_error=bounded.diagnostic or "")
        return bounded
    if trace is not None:
        trace.end(start_error="")
    return error


def _notify(observer: Callable[..., None] | None, *args: object) -> None:
    if observer is None:
        return
    try:
        observer(*args)
    except Exception:
        _log.exception("subagent registry observer raised; the run is unaffected")


class _SettledRun(SubagentRun):
    """The registry's wrapper: bounds every text a provider settles with, notifies observers."""

    def __init__(
        self,
        inner: SubagentRun,
        info: RunInfo,
        on_end: EndObserver | None,
        trace: RunTrace | None = None,
    ) -> None:
        self.id = inner.id
        self.info = info
        self._inner = inner
        self._on_end = on_end
        self._trace = trace
        self._ended = False

    async def result(self) -> SubagentResult:
        result = await self._inner.result()
        if result.diagnostic is not None:
            result = replace(result, diagnostic=bound_diagnostic(result.diagnostic))
        if self._trace is not None:
            self._trace.end(result)  # a provider off the kit: the span ends here
        self._end(result.stop_reason)
        return result

    def events(self) -> AsyncIterator[SubagentEvent]:
        return self._inner.events()

    async def dispose(self) -> str | None:
        text: str | None = None
        with anyio.CancelScope(shield=True):
            text = await self._inner.dispose()
            if not self._ended or self._trace is not None:
                # Disposing settles the result; observers still learn how the run ended.
                with anyio.move_on_after(1.0):
                    result = await self._inner.result()
                    if self._trace is not None:
                        self._trace.end(result)
                    self._end(result.stop_reason)
        return None if text is None else bound_diagnostic(text)

    def _end(self, stop_reason: str) -> None:
        if not self._ended:
            self._ended = True
            _notify(self._on_end, self.info, stop_reason)


class _SettledSession(SubagentSession):
    """The registry's wrapper of a session: each turn is bounded, observed and traced like a
    run (a span of its own under the session's)."""

    def __init__(
        self,
        inner: SubagentSession,
        registry: SubagentRegistry,
        provider: SessionProvider,
        label: str | None,
        trace: RunTrace | None,
    ) -> None:
        self.handle = inner.handle
        self._inner = inner
        self._registry = registry
        self._provider = provider
        self._label = label
        self._trace = trace

    @property
    def usage(self) -> Usage | None:
        return self._inner.usage

    @property
    def turns(self) -> int:
        return self._inner.turns

    @property
    def resumable(self) -> bool:
        return self._inner.resumable

    async def run(
        self,
        prompt: str,
        *,
        cancel: CancelSignal | None = None,
        output_schema: dict[str, object] | None = None,
    ) -> SubagentRun:
        name = self._provider.name
        if output_schema is not None and not self._provider.capabilities.output_schema:
            raise _unsupported(name, "output_schema")
        turn_trace: RunTrace | None = None
        if self._trace is not None:
            with self._trace.current():
                facts = provider_facts(self._provider)
                turn_trace = start_span(name, conversation=self.handle, **facts)
        try:
            with _tracing(turn_trace):
                inner = await self._inner.run(prompt, cancel=cancel, output_schema=output_schema)
        except BaseException:
            if turn_trace is not None:
                turn_trace.end(start_error="")
            raise
        return self._registry._settled(inner, name, self._label, turn_trace)  # pyright: ignore[reportPrivateUsage]

    async def aclose(self) -> str | None:
        text = await self._inner.aclose()
        if self._trace is not None:
            self._trace.end(SubagentResult(stop_reason="completed", usage=self._inner.usage))
        return None if text is None else bound_diagnostic(text)
