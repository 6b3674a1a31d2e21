"""SDKClient over real processes: transport, typed errors, subscriptions, close."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

import anyio
import pytest
from subagent_core.kit import SpawnError
from subagent_sdk.client import (
    JSONRPCError,
    Notification,
    RequestTimeoutError,
    RunTranscript,
    SDKClient,
    SDKError,
    SDKProtocolError,
    TransportClosedError,
)
from subagent_sdk.testing import FakeScript

Peer = Callable[..., SDKClient]


async def test_responses_out_of_order_reach_their_own_requests(peer: Peer) -> None:
    results: list[object] = []
    with anyio.fail_after(15):
        async with peer() as client:

            async def hold() -> None:
                results.append(await client.request("hold"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(hold)
                tg.start_soon(hold)
                # Both holds are written before release: the peer reads lines in order.
                await anyio.wait_all_tasks_blocked()
                assert await client.request("release") == {}
    held = [r["held"] for r in results]  # type: ignore[index]
    assert len(set(held)) == 2
    assert all(h.startswith("req_") for h in held)


async def test_garbage_and_unknown_ids_are_ignored(peer: Peer) -> None:
    noise = (
        "not json\n[1]\n\n\r\n\xff\xfe\n"
        '{"jsonrpc":"2.0","id":"req_00000000000000000000000000000000","result":1}\n'
        '{"jsonrpc":"2.0","id":99,"result":1}\n'
        '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n'
    )
    with anyio.fail_after(15):
        async with peer() as client:
            assert await client.request("raw", {"data": noise}) == {}
            assert await client.request("echo", {"x": [1, "权"]}) == {"params": {"x": [1, "权"]}}


async def test_error_frames_keep_code_message_and_data(peer: Peer) -> None:
    with anyio.fail_after(15):
        async with peer() as client:
            with pytest.raises(JSONRPCError) as caught:
                await client.request("fail")
    assert (caught.value.code, caught.value.message, caught.value.data) == (
        -32001,
        "boom",
        {"detail": [1, 2]},
    )
    assert isinstance(caught.value, SDKError)


async def test_input_end_fails_every_pending_request(
    peer: Peer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="subagent_sdk")
    failures: list[BaseException] = []
    with anyio.fail_after(15):
        async with peer() as client:

            async def call(method: str, params: dict[str, object] | None = None) -> None:
                try:
                    await client.request(method, params)  # type: ignore[arg-type]
                except TransportClosedError as error:
                    failures.append(error)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "hold")
                await anyio.wait_all_tasks_blocked()
                tg.start_soon(call, "exit", {"code": 3, "stderr": "runtime secret on stderr\n"})
            assert client.outcome is not None
            assert client.outcome.exit_code == 3
            assert client.closed
            with pytest.raises(TransportClosedError):
                await client.request("echo")
    assert len(failures) == 2
    # The host-log message carries the exit code and the stderr tail.
    assert "exit code 3" in str(failures[0])
    assert "runtime secret on stderr" in str(failures[0])
    assert client.stderr_lines == ["runtime secret on stderr"]
    assert "sdk runtime stderr: runtime secret on stderr" in caplog.text


async def test_a_request_timeout_clears_its_pending_slot(peer: Peer) -> None:
    with anyio.fail_after(15):
        async with peer() as client:
            with pytest.raises(RequestTimeoutError):
                await client.request("hold", timeout_seconds=0.2)
            assert client._pending == {}
            # The late answer has an id nobody waits for any more: ignored.
            assert await client.request("release") == {}
            assert await client.request("echo") == {"params": {}}


async def test_close_is_memoized_and_later_requests_fail(peer: Peer) -> None:
    with anyio.fail_after(15):
        client = peer()
        await client.start()
        assert await client.request("echo") == {"params": {}}
        assert await client.close() is True
        assert await client.close() is True
        assert client.outcome is not None
        assert client.outcome.exit_code == 0
        with pytest.raises(TransportClosedError):
            await client.request("echo")


async def test_close_before_start_and_spawn_failure() -> None:
    with anyio.fail_after(15):
        assert await SDKClient(sys.executable).close() is True
        client = SDKClient("/definitely/not/a/runtime")
        with pytest.raises(TransportClosedError) as caught:
            await client.start()
        assert isinstance(caught.value.__cause__, SpawnError)
        assert await client.close() is True


async def test_stderr_is_drained_continuously(peer: Peer) -> None:
    # 4 MB of stderr is far beyond a pipe buffer: the peer answers only if stderr is drained.
    with anyio.fail_after(30):
        async with peer() as client:
            for _ in range(4):
                assert await client.request("stderr", {"size": 1_000_000}) == {}
    assert client.stderr_lines
    assert all(line == "e" * 4096 for line in client.stderr_lines)


async def test_a_line_over_the_frame_limit_closes_the_transport(peer: Peer) -> None:
    with anyio.fail_after(15):
        async with peer(max_frame_bytes=1024) as client:
            with pytest.raises(TransportClosedError) as caught:
                await client.request("raw", {"data": "x" * 5000 + "\n"})
            assert "frame limit" in str(caught.value)
        assert await client.close() is True


async def test_requests_from_the_runtime_get_method_not_found(peer: Peer) -> None:
    with anyio.fail_after(15):
        async with peer() as client:
            result = await client.request("ask")
    reply = result["reply"]  # type: ignore[index]
    assert reply == {
        "jsonrpc": "2.0",
        "id": "peer-1",
        "error": {"code": -32601, "message": "Method not found"},
    }


async def test_death_keeps_queued_items_and_late_subscriptions_fail_at_once(peer: Peer) -> None:
    with anyio.fail_after(15):
        async with peer() as client:
            subscription = client.subscribe()
            waiting = client.subscribe(session_id="nobody")
            waiter_failures: list[BaseException] = []

            async def wait_on_the_empty_one() -> None:
                with pytest.raises(TransportClosedError) as caught:
                    await waiting.receive()
                waiter_failures.append(caught.value)

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait_on_the_empty_one)
                await anyio.wait_all_tasks_blocked()
                await client.request(
                    "notify", {"notifications": [["a", {"n": 1}], ["b", {"n": 2}]]}
                )
                with pytest.raises(TransportClosedError):
                    await client.request("exit", {"code": 0})
            # Death woke the blocked waiter with TransportClosedError.
            assert len(waiter_failures) == 1
            assert await subscription.receive() == Notification("a", {"n": 1})
            assert await subscription.receive() == Notification("b", {"n": 2})
            with pytest.raises(TransportClosedError):
                await subscription.receive()
            late = client.subscribe()
            with pytest.raises(TransportClosedError):
                await late.receive()


async def test_a_failing_filter_fails_only_its_own_subscription(peer: Peer) -> None:
    class FilterBroke(Exception):
        pass

    def broken(notification: Notification) -> bool:
        if notification.method == "b":
            raise FilterBroke
        return True

    with anyio.fail_after(15):
        async with peer() as client:
            failing = client.subscribe(filter=broken)
            healthy = client.subscribe(filter=lambda n: n.method != "c")
            await client.request(
                "notify", {"notifications": [["a", {}], ["b", {}], ["c", {}], ["d", {}]]}
            )
            assert (await failing.receive()).method == "a"
            with pytest.raises(FilterBroke):
                await failing.receive()
            assert [(await healthy.receive()).method for _ in range(3)] == ["a", "b", "d"]
            healthy.close()
            with pytest.raises(anyio.ClosedResourceError):
                await healthy.receive()


async def test_session_tree_scoping_follows_subagent_started(peer: Peer) -> None:
    def event(session: str, kind: str) -> list[object]:
        return [
            "session.event",
            {"sessionId": session, "event": {"type": kind, "seq": 1, "time": "t", "data": {}}},
        ]

    notifications = [
        event("other", "x1"),
        ["subagent.started", {"parentSessionId": "root", "childSessionId": "c1"}],
        event("c1", "x2"),
        ["subagent.started", {"parentSessionId": "c1", "childSessionId": "c2"}],
        ["session.status", {"sessionId": "c2", "status": "idle"}],
        ["subagent.started", {"parentSessionId": "other", "childSessionId": "c3"}],
        event("c3", "x3"),
        event("root", "x4"),
        ["subagent.finished", {"parentSessionId": "c1", "childSessionId": "c2"}],
        ["unscoped", {}],
    ]
    with anyio.fail_after(15):
        async with peer() as client:
            scoped = client.subscribe(session_id="root")
            everything = client.subscribe()
            await client.request("notify", {"notifications": notifications})
            got = [await scoped.receive() for _ in range(6)]
            assert [
                (n.method, n.params.get("sessionId") or n.params.get("childSessionId")) for n in got
            ] == [
                ("subagent.started", "c1"),
                ("session.event", "c1"),
                ("subagent.started", "c2"),
                ("session.status", "c2"),
                ("session.event", "root"),
                ("subagent.finished", "c2"),
            ]
            assert scoped.receive_nowait() is None
            assert len([await everything.receive() for _ in range(len(notifications))]) == len(
                notifications
            )


async def test_malformed_results_are_protocol_errors(fake_client: Callable[..., SDKClient]) -> None:
    with anyio.fail_after(20):
        async with fake_client(
            FakeScript(initialize_result={"serverInfo": {"name": "x"}})
        ) as client:
            with pytest.raises(SDKProtocolError):
                await client.initialize(cwd="/", provider="p", model="m")
        async with fake_client(FakeScript(prompt_result={"id": "x"})) as client:
            with pytest.raises(SDKProtocolError):
                await client.prompt("session-1", "hi")


async def test_malformed_event_or_message_in_a_run_is_a_protocol_error(
    fake_client: Callable[..., SDKClient],
) -> None:
    with anyio.fail_after(20):
        async with fake_client(FakeScript(malformed_event=True)) as client:
            with pytest.raises(SDKProtocolError):
                await client.run_prompt("session-1", "hi")
        transcript = RunTranscript("session-2")
        async with fake_client(
            FakeScript(text="partial", deltas=2, malformed_message=True)
        ) as client:
            with pytest.raises(SDKProtocolError):
                await client.run_prompt("session-2", "hi", transcript=transcript)
    assert transcript.output == "partial"


async def test_owned_run_collects_only_its_root_after_the_receipt(
    fake_client: Callable[..., SDKClient],
) -> None:
    script = FakeScript(
        text="root answer",
        deltas=3,
        stream_before_receipt="EARLIER TEXT",
        subagent={"text": "child text", "turn_end": {"kind": "error"}},
        noise=["foreign-sessions"],
        noise_at="prompt",
    )
    with anyio.fail_after(20):
        async with fake_client(script) as client:
            first = await client.run_prompt("session-a", "one")
            second = await client.run_prompt("session-a", "two")
    for transcript in (first, second):
        assert transcript.output == "root answer"
        assert transcript.delta_text == "root answer"
        assert transcript.turn_end is not None
        assert transcript.turn_end.kind == "completed"
        assert transcript.finished
        assert transcript.receipt_seen
    assert first.message_id != second.message_id


async def test_the_stderr_tail_keeps_the_newest_400_lines(peer: Peer) -> None:
    stderr = "".join(f"line {n}\n" for n in range(1000))
    with anyio.fail_after(15):
        async with peer() as client:
            with pytest.raises(TransportClosedError) as caught:
                await client.request("exit", {"code": 1, "stderr": stderr})
    expected = [f"line {n}" for n in range(600, 1000)]
    assert client.stderr_lines == expected
    assert str(caught.value).endswith("last stderr lines:\n" + "\n".join(expected))


def _event(session: str, kind: str, data: dict[str, object]) -> Notification:
    return Notification(
        "session.event",
        {"sessionId": session, "event": {"type": kind, "seq": 1, "time": "t", "data": data}},
    )


def _status(session: str, status: str) -> Notification:
    return Notification("session.status", {"sessionId": session, "status": status})


def _delta(session: str, kind: str, text: str) -> Notification:
    return _event(session, "assistant/chunk", {"chunk": {"type": kind, "text": text}})


def _message(session: str, text: str) -> Notification:
    blocks = [{"type": "text", "text": text}] if text else []
    return _event(session, "assistant/message", {"message": {"content": blocks}})


def _turn_end(session: str, kind: str) -> Notification:
    return _event(session, "turn/end", {"reason": {"kind": kind}})


def test_the_transcript_takes_root_values_from_the_receipt_to_each_turn_end() -> None:
    transcript = RunTranscript("root")
    transcript.message_id = "m-1"
    for notification in [
        _delta("root", "text-delta", "before"),
        _event("root", "agent/inbox/spliced", {"inserted": [{"id": "m-0"}]}),
        _turn_end("root", "error"),
        _event("root", "agent/inbox/spliced", {"inserted": [{"id": "x"}, {"id": "m-1"}]}),
        _delta("root", "text-delta", "a"),
        _delta("root", "reasoning-delta", "THOUGHT"),
        _delta("child", "text-delta", "CHILD"),
        _message("root", "first"),
        _turn_end("root", "error"),
        _message("root", "second"),
        _message("root", ""),
        _message("child", "CHILD"),
        _delta("root", "text-delta", "b"),
        _turn_end("root", "max-tokens"),
        _turn_end("child", "completed"),
        _status("child", "idle"),
    ]:
        transcript.feed(notification)
    assert not transcript.finished
    # Text after the root turn end is not output; the last turn end still counts.
    assert (transcript.output, transcript.delta_text) == ("first", "a")
    assert transcript.turn_end is not None
    assert transcript.turn_end.kind == "max-tokens"
    # A new root turn opens collection again.
    transcript.feed(_event("root", "turn/start", {}))
    transcript.feed(_delta("root", "text-delta", "c"))
    transcript.feed(_message("root", "third"))
    assert (transcript.output, transcript.delta_text) == ("third", "ac")
    transcript.feed(_status("root", "idle"))
    assert transcript.finished


def test_without_a_message_the_output_is_the_deltas_after_the_receipt() -> None:
    transcript = RunTranscript("root")
    transcript.message_id = "m-1"
    transcript.feed(_delta("root", "text-delta", "early "))
    transcript.feed(_event("root", "agent/inbox/spliced", {"inserted": [{"id": "m-1"}]}))
    assert transcript.output == ""
    transcript.feed(_delta("root", "text-delta", "late"))
    transcript.feed(_message("root", ""))
    assert transcript.output == "late"
    assert transcript.turn_end is None


async def test_prompts_to_one_session_queue_and_sessions_are_independent(
    fake_client: Callable[..., SDKClient],
) -> None:
    transcripts: dict[str, RunTranscript] = {}
    with anyio.fail_after(20):
        async with fake_client(FakeScript(text="queued answer", deltas=3)) as client:

            async def run(name: str, session: str) -> None:
                transcripts[name] = await client.run_prompt(session, name)

            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "first", "session-q")
                tg.start_soon(run, "second", "session-q")
                tg.start_soon(run, "other", "session-o")
    # Each run saw its own whole turn: its receipt, three deltas, message, turn end, idle.
    for transcript in transcripts.values():
        assert transcript.finished
        assert transcript.output == "queued answer"
        assert transcript.delta_text == "queued answer"
        assert transcript.turn_end is not None
        assert transcript.turn_end.kind == "completed"
    assert len({t.message_id for t in transcripts.values()}) == 3


def test_the_session_tree_remembers_a_bounded_number_of_children() -> None:
    from subagent_sdk._subscriptions import MAX_TREE_SESSIONS, SessionTree

    tree = SessionTree()
    for n in range(MAX_TREE_SESSIONS + 10):
        tree.observe(
            Notification("subagent.started", {"parentSessionId": "root", "childSessionId": f"c{n}"})
        )
    assert tree.contains("root", f"c{MAX_TREE_SESSIONS - 1}")
    assert not tree.contains("root", f"c{MAX_TREE_SESSIONS}")
