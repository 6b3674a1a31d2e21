"""The in-process `model` provider behind a real SubagentRegistry and the scripted model server."""

from __future__ import annotations

import gc
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from model_agent import AgentResult, ModelProvider
from model_agent._config import AgentConfig, ModelEndpoint
from model_agent._events import AgentEvent, TextDelta, ToolStarted
from model_agent._model_run import (
    ABORTED_BEFORE_START_TEXT,
    MODEL_CAPABILITIES,
    ModelRun,
    ShownText,
    stop_reason_of,
)
from model_agent.testing import ScriptedModelServer, open_scripted_model_server
from subagent_core import (
    CancelSignal,
    Capabilities,
    EventsDropped,
    MessageChunk,
    SubagentError,
    SubagentEvent,
    SubagentProvider,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
    ThoughtChunk,
    ToolCallEvent,
    Usage,
    UsageEvent,
    foreground_text,
    job_outcome,
)
from subagent_core.kit import DEFAULT_EVENT_CAPACITY
from subagent_core.testing import poll_until

USAGE = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


def config(server: ScriptedModelServer, workspace: Path, **overrides: Any) -> AgentConfig:
    return AgentConfig(
        endpoint=ModelEndpoint(base_url=server.base_url, api_key="unused", model="scripted"),
        workspace=workspace,
        mode="execute",
        **overrides,
    )


def registry_with(provider: ModelProvider) -> SubagentRegistry:
    registry = SubagentRegistry()
    registry.register(provider)
    return registry


def offered(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def test_status_mapping_is_total() -> None:
    assert stop_reason_of("completed") == "completed"
    assert stop_reason_of("max-tokens") == "max-tokens"
    assert stop_reason_of("step-limit") == "error"
    assert stop_reason_of("failed") == "error"
    assert stop_reason_of("cancelled") == "aborted"
    assert stop_reason_of("refusal") == "refusal"
    assert stop_reason_of("something-new") == "error"


def test_the_provider_states_what_it_enforces(workspace: Path) -> None:
    endpoint = ModelEndpoint(base_url="http://127.0.0.1:9/v1")
    provider = ModelProvider(AgentConfig(endpoint=endpoint, workspace=workspace))
    assert isinstance(provider, SubagentProvider)
    assert provider.name == "model"
    assert (
        provider.capabilities
        == MODEL_CAPABILITIES
        == Capabilities(
            output_schema=True, depth_limit=True, tool_filter=True, sessions=True, resume=True
        )
    )
    assert provider.inherits_parent_context is False


async def test_a_completed_run_through_the_registry(workspace: Path) -> None:
    rules = [{"match": "[child]", "replies": [{"text": "hello there", "usage": USAGE}]}]
    async with open_scripted_model_server({"rules": rules}) as server:
        registry = registry_with(ModelProvider(config(server, workspace)))
        with anyio.fail_after(30):
            run = await registry.start("model", SubagentRequest(prompt="[child] hi", cwd=workspace))
            async with run:
                result = await run.result()
                again = await run.result()
    assert uuid.UUID(run.id).version == 4
    assert result == SubagentResult(
        stop_reason="completed",
        output="hello there",
        diagnostic=None,
        usage=Usage(input_tokens=7, output_tokens=3),
    )
    assert again is result
    assert foreground_text(result).text == "hello there"
    (body,) = server.requests
    assert "subagent_delegate" not in offered(body)


async def test_tool_filter_and_max_depth_are_honoured(workspace: Path) -> None:
    rules = [{"match": "[child]", "replies": [{"text": "ok"}]}]
    async with open_scripted_model_server({"rules": rules}) as server:
        registry = registry_with(ModelProvider(config(server, workspace)))
        request = SubagentRequest(
            prompt="[child] x",
            cwd=workspace,
            max_depth=0,
            tool_filter=("list_directory", "subagent_delegate", "read_file"),
        )
        with anyio.fail_after(30):
            async with await registry.start("model", request) as run:
                result = await run.result()
    assert result.stop_reason == "completed"
    (body,) = server.requests
    assert offered(body) == ["read_file", "list_directory"]


async def test_a_persona_it_cannot_honour_is_refused(workspace: Path) -> None:
    endpoint = ModelEndpoint(base_url="http://127.0.0.1:9/v1")
    registry = registry_with(ModelProvider(AgentConfig(endpoint=endpoint, workspace=workspace)))
    request = SubagentRequest(prompt="x", persona="pirate")
    with pytest.raises(SubagentError) as caught:
        await registry.start("model", request)
    assert caught.value.code == "UNSUPPORTED_CAPABILITY"
    assert (
        str(caught.value) == 'subagent provider "model" does not support the "persona" capability'
    )


async def test_a_request_cancelled_before_start_starts_nothing(workspace: Path) -> None:
    rules = [{"match": "", "replies": [{"text": "never"}]}]
    async with open_scripted_model_server({"rules": rules}) as server:
        registry = registry_with(ModelProvider(config(server, workspace)))
        cancel = CancelSignal()
        cancel.cancel()
        with pytest.raises(SubagentStartError) as caught:
            await registry.start("model", SubagentRequest(prompt="x", cancel=cancel))
        assert server.request_count == 0
    assert str(caught.value) == ABORTED_BEFORE_START_TEXT
    assert caught.value.diagnostic is None


async def test_model_failure_is_error_without_diagnostic(workspace: Path) -> None:
    rules = [
        {"match": "[child]", "replies": [{"status": 401, "body": {"error": {"message": "secret"}}}]}
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        registry = registry_with(ModelProvider(config(server, workspace)))
        with anyio.fail_after(30):
            async with await registry.start("model", SubagentRequest(prompt="[child] x")) as run:
                result = await run.result()
    assert result == SubagentResult(stop_reason="error", output="", diagnostic=None, usage=None)
    assert job_outcome(result).status_line == "[status: failed, error]"


async def test_step_limit_is_error_and_max_tokens_is_max_tokens(workspace: Path) -> None:
    listing = {"tool_calls": [{"name": "list_directory", "arguments": {"path": "."}}]}
    rules = [
        {"match": "[loop]", "replies": [listing]},
        {"match": "[long]", "replies": [{"text": "trunc", "finish_reason": "length"}]},
    ]
    async with open_scripted_model_server({"rules": rules}) as server:
        registry = registry_with(ModelProvider(config(server, workspace, max_steps=2)))
        with anyio.fail_after(30):
            async with await registry.start("model", SubagentRequest(prompt="[loop] x")) as run:
                looped = await run.result()
            async with await registry.start("model", SubagentRequest(prompt="[long] x")) as run:
                long = await run.result()
    assert (looped.stop_reason, looped.diagnostic) == ("error", None)
    assert (long.stop_reason, long.output, long.diagnostic) == ("max-tokens", "trunc", None)


async def test_local_cancel_settles_aborted_with_partial_output(workspace: Path) -> None:
    rules = [{"match": "[child]", "replies": [{"text": "partial", "hang": "after-text"}]}]
    cancel = CancelSignal()

    def observe(event: AgentEvent) -> None:
        # The child's stream showed its text and now hangs: cancel reaches the model stream.
        if isinstance(event, TextDelta) and event.text == "partial":
            cancel.cancel()

    async with open_scripted_model_server({"rules": rules}) as server:
        registry = registry_with(ModelProvider(config(server, workspace), observer=observe))
        with anyio.fail_after(30):
            run = await registry.start("model", SubagentRequest(prompt="[child] x", cancel=cancel))
            async with run:
                result = await run.result()
            assert await run.dispose() is None
    assert result == SubagentResult(stop_reason="aborted", output="partial", diagnostic=None)
    assert job_outcome(result).status == "killed"


async def test_dispose_before_result_settles_aborted_and_never_calls_the_model(
    workspace: Path,
) -> None:
    rules = [{"match": "", "replies": [{"text": "never"}]}]
    async with open_scripted_model_server({"rules": rules}) as server:
        registry = registry_with(ModelProvider(config(server, workspace)))
        with anyio.fail_after(30):
            run = await registry.start("model", SubagentRequest(prompt="x"))
            first = await run.dispose()
            second = await run.dispose()
            result = await run.result()
        assert server.request_count == 0
    assert (first, second) == (None, None)
    assert result == SubagentResult(stop_reason="aborted")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell command")
async def test_dispose_stops_a_running_child_and_its_processes(
    workspace: Path, process_leak_guard: list[int]
) -> None:
    command = {"command": "touch ready; sleep 1000 & sleep 1000"}
    run_it = {"tool_calls": [{"name": "process_execute", "arguments": command}]}
    rules = [{"match": "[child]", "replies": [run_it, {"text": "never"}]}]
    async with open_scripted_model_server({"rules": rules}) as server:
        registry = registry_with(ModelProvider(config(server, workspace)))
        with anyio.fail_after(30):
            run = await registry.start("model", SubagentRequest(prompt="[child] x"))
            results: list[SubagentResult] = []
            async with anyio.create_task_group() as tg:

                async def drive() -> None:
                    results.append(await run.result())

                tg.start_soon(drive)
                await poll_until(lambda: os.path.exists(workspace / "ready"))
                assert await run.dispose() is None
    assert results[0].stop_reason == "aborted"
    assert results[0].diagnostic is None
    assert len(process_leak_guard) == 1


class SlowToStopChild:
    """A child that shows text, then winds down only when the test releases it."""

    def __init__(self, shown: ShownText, order: list[str]) -> None:
        self.shown = shown
        self.order = order
        self.streaming = anyio.Event()
        self.release = anyio.Event()

    async def run(self, prompt: str, cancel: CancelSignal) -> AgentResult:
        self.shown(ToolStarted("c1", "list_directory", "{}"))
        self.shown(TextDelta("part"))
        self.shown(TextDelta("ial"))
        self.streaming.set()
        await cancel.wait()
        await self.release.wait()
        self.order.append("child-ended")
        return AgentResult(status="cancelled", output="ignored: already settled")


async def test_result_settles_on_local_cancel_without_waiting_for_the_child() -> None:
    order: list[str] = []
    shown = ShownText()
    child = SlowToStopChild(shown, order)
    cancel = CancelSignal()
    run = ModelRun(child, "x", cancel, shown=shown)
    results: list[SubagentResult] = []
    disposed: list[str | None] = []
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:

            async def drive() -> None:
                results.append(await run.result())
                order.append("result")

            async def dispose() -> None:
                disposed.append(await run.dispose())
                order.append("disposed")

            tg.start_soon(drive)
            await child.streaming.wait()
            cancel.cancel()
            await anyio.wait_all_tasks_blocked()
            # result() settled while the child is still winding down.
            assert order == ["result"]
            tg.start_soon(dispose)
            await anyio.wait_all_tasks_blocked()
            # dispose() waits for the child's end.
            assert order == ["result"]
            child.release.set()
    assert order == ["result", "child-ended", "disposed"]
    assert results == [SubagentResult(stop_reason="aborted", output="partial", diagnostic=None)]
    assert disposed == [None]
    assert await run.result() is results[0]
    assert await run.dispose() is None


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell command")
async def test_a_cancelled_child_command_is_torn_down_by_dispose(
    workspace: Path, process_leak_guard: list[int]
) -> None:
    command = {"command": "trap '' TERM; echo $$ > pid; touch ready; sleep 1000"}
    run_it = {"tool_calls": [{"name": "process_execute", "arguments": command}]}
    rules = [{"match": "[child]", "replies": [run_it, {"text": "never"}]}]
    cancel = CancelSignal()
    async with open_scripted_model_server({"rules": rules}) as server:
        registry = registry_with(ModelProvider(config(server, workspace)))
        with anyio.fail_after(30):
            run = await registry.start("model", SubagentRequest(prompt="[child] x", cancel=cancel))
            async with anyio.create_task_group() as tg:

                async def cancel_when_ready() -> None:
                    await poll_until(lambda: os.path.exists(workspace / "ready"))
                    cancel.cancel()

                tg.start_soon(cancel_when_ready)
                result = await run.result()
            disposed = await run.dispose()
        assert server.request_count == 1
    assert result == SubagentResult(stop_reason="aborted", output="", diagnostic=None)
    assert disposed is None
    pid = int((workspace / "pid").read_text(encoding="ascii"))
    assert not _alive(pid)
    assert len(process_leak_guard) == 1


def _alive(pid: int) -> bool:
    """True while `pid` is a live process (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


EVENT_SCRIPT = [
    {
        "match": "[child] events",
        "replies": [
            {
                "reasoning": "think",
                "text": "hello",
                "chunks": 2,
                "tool_calls": [
                    {"name": "process_execute", "arguments": {"command": "exit 3"}, "id": "p1"},
                    {"name": "read_file", "arguments": {"path": "missing.txt"}, "id": "r1"},
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2},
            },
            {"text": "done", "usage": {"prompt_tokens": 5, "completion_tokens": 3}},
        ],
    }
]

EXPECTED_EVENTS = [
    ThoughtChunk(text="think"),
    MessageChunk(text="hel"),
    MessageChunk(text="lo"),
    ToolCallEvent(call_id="p1", kind="execute", status="in_progress", title="exit 3"),
    ToolCallEvent(call_id="p1", kind="execute", status="completed", exit_code=3),
    ToolCallEvent(call_id="r1", kind="read", status="in_progress", title="read_file missing.txt"),
    ToolCallEvent(call_id="r1", kind="read", status="failed"),
    MessageChunk(text="done"),
    UsageEvent(input_tokens=15, output_tokens=5),
]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell command")
@pytest.mark.parametrize("consume", [True, False])
async def test_events_are_the_childs_loop_in_order_and_do_not_change_the_result(
    workspace: Path, process_leak_guard: list[int], consume: bool
) -> None:
    async with open_scripted_model_server({"rules": EVENT_SCRIPT}) as server:
        registry = registry_with(ModelProvider(config(server, workspace)))
        events: list[SubagentEvent] = []
        with anyio.fail_after(30):
            run = await registry.start("model", SubagentRequest(prompt="[child] events"))
            async with run, anyio.create_task_group() as tg:
                if consume:

                    async def read() -> None:
                        async for event in run.events():
                            events.append(event)

                    tg.start_soon(read)
                result = await run.result()
            if not consume:
                events = [event async for event in run.events()]
    assert result == SubagentResult(
        stop_reason="completed",
        output="done",
        diagnostic=None,
        usage=Usage(input_tokens=15, output_tokens=5),
    )
    assert events == EXPECTED_EVENTS
    assert len(process_leak_guard) == 1


async def test_events_end_when_a_cancelled_run_settles(workspace: Path) -> None:
    rules = [{"match": "[child]", "replies": [{"text": "partial", "hang": "after-text"}]}]
    cancel = CancelSignal()
    async with open_scripted_model_server({"rules": rules}) as server:
        registry = registry_with(ModelProvider(config(server, workspace)))
        with anyio.fail_after(30):
            run = await registry.start("model", SubagentRequest(prompt="[child] x", cancel=cancel))
            async with run:
                seen: list[SubagentEvent] = []
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run.result)
                    async for event in run.events():
                        seen.append(event)
                        cancel.cancel()
                result = await run.result()
    assert seen == [MessageChunk(text="partial")]
    assert result == SubagentResult(stop_reason="aborted", output="partial", diagnostic=None)


@pytest.mark.timeout(240)  # 100k real SSE frames: slow on a loaded machine, bounded anyway
async def test_a_consumer_that_never_reads_costs_a_bounded_buffer(workspace: Path) -> None:
    """100k streamed chunks, events read only after the run: bounded memory, one drop count."""
    chunks = 100_000
    rules = [
        {
            "match": "[child] chatty",
            "replies": [
                {
                    "text": "x" * chunks,
                    "chunks": chunks,
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1},
                }
            ],
        }
    ]
    process = psutil.Process()
    async with open_scripted_model_server({"rules": rules}) as server:
        registry = registry_with(ModelProvider(config(server, workspace)))
        with anyio.fail_after(230):
            gc.collect()
            before = process.memory_info().rss
            async with await registry.start(
                "model", SubagentRequest(prompt="[child] chatty")
            ) as run:
                result = await run.result()
                growth = process.memory_info().rss - before
                events = [event async for event in run.events()]
    assert result.stop_reason == "completed"
    assert result.output == "x" * chunks
    assert growth <= 32 * 1024 * 1024, growth
    published = chunks + 1  # every chunk, then the usage totals
    assert events[0] == EventsDropped(count=published - DEFAULT_EVENT_CAPACITY)
    assert events[1:] == [MessageChunk(text="x")] * (DEFAULT_EVENT_CAPACITY - 1) + [
        UsageEvent(input_tokens=1, output_tokens=1)
    ]
