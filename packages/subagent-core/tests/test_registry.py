"""The registry: names, checks before any start, observers, and the shared settlement boundary."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import anyio
import pytest
from subagent_core import (
    NO_CAPABILITIES,
    Capabilities,
    RunInfo,
    SubagentError,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentStartError,
)
from subagent_core.kit import bound_diagnostic, new_run_id

LONG_TEXT = "权限" * 2000  # 12000 UTF-8 bytes
BOUNDED_LONG_TEXT = "权限" * 678 + "权" + "\n[diagnostic truncated]"


class GatedRun(SubagentRun):
    """A run whose result is released by the test; dispose settles it `aborted`."""

    def __init__(self, result: SubagentResult, dispose_text: str | None) -> None:
        self.id = new_run_id()
        self._result = result
        self._dispose_text = dispose_text
        self.release = anyio.Event()
        self.disposals = 0

    async def result(self) -> SubagentResult:
        await self.release.wait()
        return self._result

    async def dispose(self) -> str | None:
        self.disposals += 1
        if not self.release.is_set():
            self._result = SubagentResult(stop_reason="aborted")
            self.release.set()
        return self._dispose_text


@dataclass
class StubProvider:
    """A provider that starts in-process runs with a scripted outcome."""

    name: str = "stub"
    capabilities: Capabilities = NO_CAPABILITIES
    inherits_parent_context: bool = False
    result: SubagentResult = field(
        default_factory=lambda: SubagentResult(stop_reason="completed", output="done")
    )
    dispose_text: str | None = None
    start_error: SubagentStartError | None = None
    released: bool = True
    starts: list[SubagentRequest] = field(default_factory=list[SubagentRequest])
    runs: list[GatedRun] = field(default_factory=list[GatedRun])

    async def start(self, request: SubagentRequest) -> SubagentRun:
        self.starts.append(request)
        if self.start_error is not None:
            raise self.start_error
        run = GatedRun(self.result, self.dispose_text)
        if self.released:
            run.release.set()
        self.runs.append(run)
        return run


# --- names -------------------------------------------------------------------------------------


def test_a_duplicate_name_is_refused_with_its_exact_text_and_code() -> None:
    registry = SubagentRegistry()
    registry.register(StubProvider(name="acp"))
    with pytest.raises(SubagentError) as caught:
        registry.register(StubProvider(name="acp"))
    assert caught.value.code == "DUPLICATE_PROVIDER"
    assert str(caught.value) == 'a subagent provider named "acp" is already registered'
    assert caught.value.message == str(caught.value)


def test_names_keep_registration_order_and_re_registering_moves_a_name_to_the_end() -> None:
    registry = SubagentRegistry()
    first = StubProvider(name="a")
    unregister_a = registry.register(first)
    registry.register(StubProvider(name="b"))
    registry.register(StubProvider(name="c"))
    assert registry.names() == ["a", "b", "c"]
    assert registry.get("a") is first
    assert registry.get("zzz") is None
    unregister_a()
    unregister_a()  # a second call is harmless
    assert registry.names() == ["b", "c"]
    assert registry.get("a") is None
    again = StubProvider(name="a")
    registry.register(again)
    assert registry.names() == ["b", "c", "a"]
    unregister_a()  # the stale unregister function leaves the newer provider alone
    assert registry.get("a") is again


async def test_an_unknown_name_is_refused_with_its_exact_text_and_code() -> None:
    registry = SubagentRegistry()
    with anyio.fail_after(5), pytest.raises(SubagentError) as caught:
        await registry.start("ghost", SubagentRequest(prompt="hi"))
    assert caught.value.code == "NO_PROVIDER"
    assert str(caught.value) == 'no subagent provider registered for "ghost"'


# --- capabilities and max_depth ----------------------------------------------------------------

ALL_GATED = {
    "output_schema": {"type": "object"},
    "max_depth": 2,
    "tool_filter": ("read",),
    "persona": "critic",
}


@pytest.mark.parametrize(
    ("capabilities", "refused"),
    [
        (Capabilities(), "output_schema"),
        (Capabilities(output_schema=True), "depth_limit"),
        (Capabilities(output_schema=True, depth_limit=True), "tool_filter"),
        (Capabilities(output_schema=True, depth_limit=True, tool_filter=True), "persona"),
    ],
)
async def test_the_first_unsupported_capability_is_refused_in_order(
    capabilities: Capabilities, refused: str
) -> None:
    provider = StubProvider(name="p", capabilities=capabilities)
    registry = SubagentRegistry()
    registry.register(provider)
    with anyio.fail_after(5), pytest.raises(SubagentError) as caught:
        await registry.start("p", SubagentRequest(prompt="hi", **ALL_GATED))
    assert caught.value.code == "UNSUPPORTED_CAPABILITY"
    assert str(caught.value) == f'subagent provider "p" does not support the "{refused}" capability'
    assert provider.starts == []


@pytest.mark.parametrize(
    ("field_name", "value", "capability"),
    [
        ("output_schema", {}, "output_schema"),
        ("max_depth", 0, "depth_limit"),
        ("tool_filter", (), "tool_filter"),
        ("persona", "", "persona"),
    ],
)
async def test_each_gated_field_alone_is_refused_by_a_provider_without_it(
    field_name: str, value: object, capability: str
) -> None:
    """A field is requested when it is not None, even when it is empty or zero."""
    provider = StubProvider(name="acp")
    registry = SubagentRegistry()
    registry.register(provider)
    request = SubagentRequest(prompt="hi", **{field_name: value})  # type: ignore[arg-type]
    with anyio.fail_after(5), pytest.raises(SubagentError) as caught:
        await registry.start("acp", request)
    assert caught.value.code == "UNSUPPORTED_CAPABILITY"
    assert (
        str(caught.value)
        == f'subagent provider "acp" does not support the "{capability}" capability'
    )
    assert provider.starts == []


async def test_a_full_capability_provider_accepts_every_gated_field() -> None:
    full = Capabilities(output_schema=True, depth_limit=True, tool_filter=True, persona=True)
    provider = StubProvider(name="model", capabilities=full)
    registry = SubagentRegistry()
    registry.register(provider)
    with anyio.fail_after(5):
        async with await registry.start("model", SubagentRequest(prompt="hi", **ALL_GATED)) as run:
            assert await run.result() == SubagentResult(stop_reason="completed", output="done")
    assert len(provider.starts) == 1


@pytest.mark.parametrize("max_depth", [True, False, -1, -100, 1.5, "2"])
async def test_a_bad_max_depth_is_refused_before_the_provider_starts(max_depth: object) -> None:
    provider = StubProvider(name="model", capabilities=Capabilities(depth_limit=True))
    registry = SubagentRegistry()
    registry.register(provider)
    request = SubagentRequest(prompt="hi", max_depth=max_depth)  # type: ignore[arg-type]
    with anyio.fail_after(5), pytest.raises(ValueError) as caught:
        await registry.start("model", request)
    assert type(caught.value) is ValueError
    assert str(caught.value) == "max_depth must be a non-negative int"
    assert provider.starts == []


async def test_a_capability_refusal_comes_before_the_max_depth_check() -> None:
    registry = SubagentRegistry()
    registry.register(StubProvider(name="acp"))
    with anyio.fail_after(5), pytest.raises(SubagentError) as caught:
        await registry.start("acp", SubagentRequest(prompt="hi", max_depth=-1))
    assert caught.value.code == "UNSUPPORTED_CAPABILITY"


@pytest.mark.parametrize("max_depth", [0, 1, 7])
async def test_a_non_negative_max_depth_starts(max_depth: int) -> None:
    provider = StubProvider(name="model", capabilities=Capabilities(depth_limit=True))
    registry = SubagentRegistry()
    registry.register(provider)
    with anyio.fail_after(5):
        async with await registry.start(
            "model", SubagentRequest(prompt="hi", max_depth=max_depth)
        ) as run:
            assert (await run.result()).stop_reason == "completed"
    assert provider.starts[0].max_depth == max_depth


# --- publication, unregister, observers --------------------------------------------------------


async def test_unregister_blocks_new_starts_while_a_published_run_still_completes() -> None:
    provider = StubProvider(name="acp", released=False)
    registry = SubagentRegistry()
    unregister = registry.register(provider)
    with anyio.fail_after(5):
        run = await registry.start("acp", SubagentRequest(prompt="hi"))
        unregister()
        with pytest.raises(SubagentError) as caught:
            await registry.start("acp", SubagentRequest(prompt="again"))
        assert caught.value.code == "NO_PROVIDER"
        async with run:
            provider.runs[0].release.set()
            assert await run.result() == SubagentResult(stop_reason="completed", output="done")
    assert len(provider.starts) == 1
    assert provider.runs[0].disposals == 1


async def test_observers_learn_start_and_end_once() -> None:
    started: list[RunInfo] = []
    ended: list[tuple[RunInfo, str]] = []
    registry = SubagentRegistry(
        on_start=started.append, on_end=lambda info, reason: ended.append((info, reason))
    )
    registry.register(StubProvider(name="acp"))
    with anyio.fail_after(5):
        async with await registry.start("acp", SubagentRequest(prompt="hi", label="lbl")) as run:
            info = RunInfo(run.id, "acp", "lbl")
            assert started == [info]
            assert ended == []
            await run.result()
            await run.result()
            assert ended == [(info, "completed")]
        assert await run.dispose() is None
    assert started == [info]
    assert ended == [(info, "completed")]


async def test_disposing_before_the_result_reports_the_aborted_end() -> None:
    ended: list[tuple[RunInfo, str]] = []
    registry = SubagentRegistry(on_end=lambda info, reason: ended.append((info, reason)))
    registry.register(StubProvider(name="acp", released=False))
    with anyio.fail_after(5):
        run = await registry.start("acp", SubagentRequest(prompt="hi"))
        assert await run.dispose() is None
        assert await run.result() == SubagentResult(stop_reason="aborted")
    assert ended == [(RunInfo(run.id, "acp", None), "aborted")]


async def test_a_raising_observer_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    def explode(*_: object) -> None:
        raise RuntimeError("observer bug")

    registry = SubagentRegistry(on_start=explode, on_end=explode)
    provider = StubProvider(name="acp")
    registry.register(provider)
    with anyio.fail_after(5), caplog.at_level(logging.ERROR, logger="subagent_core"):
        async with await registry.start("acp", SubagentRequest(prompt="hi")) as run:
            assert run.id == provider.runs[0].id
            assert await run.result() == SubagentResult(stop_reason="completed", output="done")
        assert await run.dispose() is None
    assert provider.runs[0].disposals >= 1
    messages = [record.getMessage() for record in caplog.records]
    assert messages == ["subagent registry observer raised; the run is unaffected"] * 2


async def test_the_run_id_is_the_providers_parent_side_id() -> None:
    provider = StubProvider(name="acp")
    registry = SubagentRegistry()
    registry.register(provider)
    with anyio.fail_after(5):
        one = await registry.start("acp", SubagentRequest(prompt="hi"))
        two = await registry.start("acp", SubagentRequest(prompt="hi"))
        async with one, two:
            assert one.id == provider.runs[0].id
            assert two.id == provider.runs[1].id
            assert one.id != two.id


# --- the shared settlement boundary ------------------------------------------------------------


async def test_an_over_long_result_diagnostic_is_bounded() -> None:
    result = SubagentResult(stop_reason="error", output="partial", diagnostic=LONG_TEXT)
    registry = SubagentRegistry()
    registry.register(StubProvider(name="acp", result=result))
    with anyio.fail_after(5):
        async with await registry.start("acp", SubagentRequest(prompt="hi")) as run:
            settled = await run.result()
    assert settled == SubagentResult(
        stop_reason="error", output="partial", diagnostic=BOUNDED_LONG_TEXT
    )
    assert settled.diagnostic is not None
    assert len(settled.diagnostic.encode()) == 4094


async def test_a_short_result_diagnostic_passes_unchanged() -> None:
    result = SubagentResult(stop_reason="error", diagnostic="Subagent failure (provider: acp)")
    registry = SubagentRegistry()
    registry.register(StubProvider(name="acp", result=result))
    with anyio.fail_after(5):
        async with await registry.start("acp", SubagentRequest(prompt="hi")) as run:
            assert await run.result() == result


async def test_an_over_long_dispose_text_is_bounded_and_memoized_by_the_provider() -> None:
    provider = StubProvider(name="acp", dispose_text=LONG_TEXT)
    registry = SubagentRegistry()
    registry.register(provider)
    with anyio.fail_after(5):
        run = await registry.start("acp", SubagentRequest(prompt="hi"))
        assert await run.dispose() == BOUNDED_LONG_TEXT
        assert await run.dispose() == BOUNDED_LONG_TEXT


@pytest.mark.parametrize(
    ("message", "diagnostic", "expected_text", "expected_diagnostic"),
    [
        (LONG_TEXT, LONG_TEXT, BOUNDED_LONG_TEXT, BOUNDED_LONG_TEXT),
        (LONG_TEXT, None, BOUNDED_LONG_TEXT, None),
        ("ignored", "short line", "short line", "short line"),
        (
            "subagent request was aborted before the ACP child started",
            None,
            "subagent request was aborted before the ACP child started",
            None,
        ),
    ],
)
async def test_a_start_error_is_bounded_by_the_registry(
    message: str, diagnostic: str | None, expected_text: str, expected_diagnostic: str | None
) -> None:
    original = SubagentStartError(message, diagnostic)
    registry = SubagentRegistry()
    registry.register(StubProvider(name="acp", start_error=original))
    with anyio.fail_after(5), pytest.raises(SubagentStartError) as caught:
        await registry.start("acp", SubagentRequest(prompt="hi"))
    assert caught.value.code == "START_FAILED"
    assert str(caught.value) == expected_text
    assert caught.value.diagnostic == expected_diagnostic
    assert len(str(caught.value).encode()) <= 4096
    assert caught.value.__cause__ is original


def test_the_bounded_texts_above_match_bound_diagnostic() -> None:
    assert bound_diagnostic(LONG_TEXT) == BOUNDED_LONG_TEXT
