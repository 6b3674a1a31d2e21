"""Closing a registry closes its providers: warm resources go, published runs stay with holders."""

from __future__ import annotations

import logging

import anyio
import pytest
from subagent_core import (
    NO_CAPABILITIES,
    SubagentProvider,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
)
from subagent_core.kit import ClosableProvider, new_run_id

closed: list[str] = []


class _Run(SubagentRun):
    def __init__(self) -> None:
        self.id = new_run_id()

    async def result(self) -> SubagentResult:
        return SubagentResult(stop_reason="completed", output="still here")

    async def dispose(self) -> str | None:
        return None


class _Plain:
    capabilities = NO_CAPABILITIES
    inherits_parent_context = False

    def __init__(self, name: str) -> None:
        self.name = name

    async def start(self, request: SubagentRequest) -> SubagentRun:
        return _Run()


class _Pooled(_Plain):
    def __init__(self, name: str, *, fail: bool = False) -> None:
        super().__init__(name)
        self.fail = fail

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()  # a cancelled caller must not skip this
        closed.append(self.name)
        if self.fail:
            raise RuntimeError("pool teardown failed")


@pytest.fixture(autouse=True)
def _reset() -> None:
    closed.clear()


def test_closable_is_a_provider_with_aclose() -> None:
    assert isinstance(_Pooled("a"), ClosableProvider)
    assert isinstance(_Pooled("a"), SubagentProvider)
    assert not isinstance(_Plain("b"), ClosableProvider)


async def test_leaving_the_registry_block_closes_every_closable_provider_newest_first(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with anyio.fail_after(5), caplog.at_level(logging.ERROR, logger="subagent_core"):
        async with SubagentRegistry() as registry:
            registry.register(_Pooled("one"))
            registry.register(_Plain("plain"))
            registry.register(_Pooled("two", fail=True))
            registry.register(_Pooled("three"))
            run = await registry.start("one", SubagentRequest(prompt="p"))
        assert registry.names() == []
        # A published run stays with its holder and completes.
        async with run:
            assert (await run.result()).output == "still here"
    assert closed == ["three", "two", "one"]
    assert [r.getMessage() for r in caplog.records] == ["closing subagent provider 'two' raised"]


async def test_unregister_and_close_one_provider() -> None:
    registry = SubagentRegistry()
    registry.register(_Pooled("a"))
    registry.register(_Pooled("b"))
    with anyio.fail_after(5):
        assert await registry.unregister_and_close("a") is True
        assert await registry.unregister_and_close("a") is False
        assert registry.names() == ["b"]
        registry.register(_Pooled("a"))  # the name is free again
        await registry.aclose()
    assert closed == ["a", "a", "b"]


async def test_a_cancelled_closer_still_closes_the_provider() -> None:
    registry = SubagentRegistry()
    registry.register(_Pooled("warm"))
    with anyio.fail_after(5):
        with anyio.CancelScope() as scope:
            scope.cancel()
            await registry.aclose()
    assert closed == ["warm"]


# -- the plain unregister() function, called from sync code --------------------------------------


class _Signalled(_Plain):
    """Records where its close ran; `closing` is set when it has run."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.closing = anyio.Event()
        self.closes = 0

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()
        self.closes += 1
        self.closing.set()


async def test_unregister_inside_a_running_loop_starts_the_close_at_once() -> None:
    registry = SubagentRegistry()
    provider = _Signalled("warm")
    unregister = registry.register(provider)
    with anyio.fail_after(5):
        await registry.start("warm", SubagentRequest(prompt="p"))
        unregister()  # sync: returns at once, the close runs in a task of its own
        assert registry.names() == []
        await provider.closing.wait()
        unregister()  # a second call closes nothing twice
        await anyio.lowlevel.checkpoint()
    assert provider.closes == 1


async def test_unregister_from_another_thread_closes_on_the_providers_loop() -> None:
    registry = SubagentRegistry()
    provider = _Signalled("warm")
    unregister = registry.register(provider)
    with anyio.fail_after(5):
        await registry.start("warm", SubagentRequest(prompt="p"))
        await anyio.to_thread.run_sync(unregister)
        await provider.closing.wait()
    assert provider.closes == 1


def test_unregister_outside_any_loop_only_unregisters(caplog: pytest.LogCaptureFixture) -> None:
    registry = SubagentRegistry()
    provider = _Signalled("warm")
    plain = _Plain("plain")
    unregister = registry.register(provider)
    unregister_plain = registry.register(plain)
    with caplog.at_level(logging.INFO, logger="subagent_core"):
        unregister()
        unregister_plain()
    assert registry.names() == []
    assert provider.closes == 0
    assert [r.getMessage() for r in caplog.records] == [
        "unregistered provider 'warm': no running event loop can close it; "
        "use `await registry.unregister_and_close(name)` inside the loop"
    ]


async def test_a_stale_unregister_does_not_close_the_newer_provider() -> None:
    registry = SubagentRegistry()
    old = _Signalled("warm")
    unregister_old = registry.register(old)
    with anyio.fail_after(5):
        assert await registry.unregister_and_close("warm") is True
        newer = _Signalled("warm")
        registry.register(newer)
        unregister_old()
        await anyio.lowlevel.checkpoint()
        assert registry.names() == ["warm"]
        await registry.aclose()
    assert (old.closes, newer.closes) == (1, 1)
