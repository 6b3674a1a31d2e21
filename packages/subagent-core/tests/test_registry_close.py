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
