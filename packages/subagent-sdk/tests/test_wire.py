"""Wire compatibility: the exact frames the client writes, and the typed wire structures."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from subagent_sdk.client import SDKClient, SDKProtocolError, TurnEnd
from subagent_sdk.wire import (
    MAX_TOKENS_MESSAGE,
    InitializeParams,
    InitializeResult,
    InvalidParamsError,
    PromptParams,
    PromptResult,
    SessionEvent,
    SessionStatus,
    SubagentFinished,
    SubagentStarted,
    turn_end_reason,
    unknown_method_message,
)

_ID = re.compile(rb'"id":"req_[0-9a-f]{32}"')


async def test_golden_lines_for_initialize_prompt_and_shutdown(
    peer: Callable[..., SDKClient], tmp_path: Path
) -> None:
    """Key order jsonrpc,id,method,params; req_<32 hex> ids; params always present; compact."""
    with anyio.fail_after(15):
        async with peer(record=True) as client:
            await client.initialize(
                cwd="/work/ws", provider="deepseek-official", model="deepseek-chat"
            )
            await client.initialize(cwd="/w", provider="p", model="m", max_tokens=4096)
            await client.prompt("session-abc", 'say "hi" 权限\n')
        assert client.outcome is not None
        assert client.outcome.exit_code == 0
    lines = (tmp_path / "peer.log").read_bytes().splitlines(keepends=True)
    assert all(_ID.search(line) for line in lines)
    assert [_ID.sub(b'"id":"ID"', line) for line in lines] == [
        b'{"jsonrpc":"2.0","id":"ID","method":"initialize","params":{"cwd":"/work/ws","provider":"deepseek-official","model":"deepseek-chat"}}\n',
        b'{"jsonrpc":"2.0","id":"ID","method":"initialize","params":{"cwd":"/w","provider":"p","model":"m","maxTokens":4096}}\n',
        '{"jsonrpc":"2.0","id":"ID","method":"session/prompt","params":{"sessionId":"session-abc","contentBlocks":[{"type":"text","text":"say \\"hi\\" 权限\\n"}]}}\n'.encode(),
        b'{"jsonrpc":"2.0","id":"ID","method":"shutdown","params":{}}\n',
    ]
    ids = [_ID.search(line).group() for line in lines]  # type: ignore[union-attr]
    assert len(set(ids)) == 4


def test_initialize_result_needs_string_server_info_fields() -> None:
    good = {"serverInfo": {"name": "deepseek-harness-sdk-runtime", "version": "1.2.3"}}
    assert InitializeResult.parse(good) == InitializeResult(version="1.2.3")
    assert InitializeResult(version="9").to_result() == {
        "serverInfo": {"name": "deepseek-harness-sdk-runtime", "version": "9"}
    }
    for bad in (
        None,
        {},
        {"serverInfo": "x"},
        {"serverInfo": {"name": "n"}},
        {"serverInfo": {"name": 1, "version": "v"}},
    ):
        with pytest.raises(SDKProtocolError):
            InitializeResult.parse(bad)  # type: ignore[arg-type]


def test_prompt_result_needs_a_message_id() -> None:
    assert PromptResult.parse({"messageId": "m"}) == PromptResult(message_id="m")
    for bad in (None, {}, {"messageId": 3}, []):
        with pytest.raises(SDKProtocolError):
            PromptResult.parse(bad)  # type: ignore[arg-type]


def test_server_side_params_validation_uses_the_runtime_messages() -> None:
    params = {"cwd": "/w", "provider": "p", "model": "m", "maxTokens": 10}
    assert InitializeParams.from_params(params).max_tokens == 10  # type: ignore[arg-type]
    for tokens in (0, -1, 1.5, True, "10", 2**53):
        with pytest.raises(InvalidParamsError) as caught:
            InitializeParams.from_params({**params, "maxTokens": tokens})  # type: ignore[dict-item]
        assert str(caught.value) == MAX_TOKENS_MESSAGE
    with pytest.raises(InvalidParamsError):
        InitializeParams.from_params({"provider": "p", "model": "m"})
    prompt = PromptParams.from_params(
        {
            "sessionId": "s",
            "contentBlocks": [
                {"type": "text", "text": "a"},
                {"type": "image"},
                {"type": "text", "text": "b"},
            ],
        }
    )
    assert prompt == PromptParams(session_id="s", text="ab")
    with pytest.raises(InvalidParamsError):
        PromptParams.from_params({"sessionId": "s", "contentBlocks": "x"})
    assert unknown_method_message("x/y") == "unknown DeepSeek Harness SDK runtime method: x/y"


def test_session_event_envelope_and_payloads() -> None:
    event = SessionEvent.parse(
        {"sessionId": "s", "event": {"type": "t", "seq": 1, "time": "now", "data": {"k": 1}}}
    )
    assert event == SessionEvent(session_id="s", type="t", seq=1, time="now", data={"k": 1})
    assert SessionEvent.parse(event.to_params()) == event
    for bad in (
        {"event": {"type": "t", "seq": 1, "data": {}}},
        {"sessionId": "s"},
        {"sessionId": "s", "event": "x"},
        {"sessionId": "s", "event": {"seq": 1, "data": {}}},
        {"sessionId": "s", "event": {"type": "t", "seq": "1", "data": {}}},
        {"sessionId": "s", "event": {"type": "t", "seq": True, "data": {}}},
        {"sessionId": "s", "event": {"type": "t", "seq": 1, "data": []}},
    ):
        with pytest.raises(SDKProtocolError):
            SessionEvent.parse(bad)  # type: ignore[arg-type]

    def with_data(data: dict[str, object]) -> SessionEvent:
        return SessionEvent(session_id="s", type="x", seq=1, data=data)  # type: ignore[arg-type]

    assert with_data({"chunk": {"type": "text-delta", "text": "a"}}).chunk_text() == "a"
    assert with_data({"chunk": {"type": "reasoning-delta", "text": "r"}}).chunk_text() is None
    assert (
        with_data(
            {
                "message": {
                    "content": [
                        {"type": "text", "text": "a"},
                        {"type": "tool-call"},
                        {"type": "text", "text": "b"},
                    ]
                }
            }
        ).message_text()
        == "ab"
    )
    assert with_data({"message": {"content": []}}).message_text() == ""
    assert with_data({"inserted": [{"id": "m1"}, "junk", {"id": 2}]}).inserted_ids() == ["m1"]
    for bad_message in (
        {},
        {"message": {"content": "text"}},
        {"message": {"content": [{"text": "a"}]}},
        {"message": {"content": [{"type": "text"}]}},
    ):
        with pytest.raises(SDKProtocolError):
            with_data(bad_message).message_text()
    with pytest.raises(SDKProtocolError):
        with_data({"chunk": {"type": "text-delta", "text": 5}}).chunk_text()


def test_notifications_round_trip() -> None:
    status = SessionStatus(session_id="s", status="idle")
    assert SessionStatus.parse(status.to_params()) == status
    with pytest.raises(SDKProtocolError):
        SessionStatus.parse({"sessionId": "s", "status": "sleeping"})
    started = SubagentStarted(parent_session_id="p", child_session_id="c")
    assert started.to_params() == {"parentSessionId": "p", "childSessionId": "c"}
    assert SubagentStarted.parse(started.to_params()) == started
    finished = SubagentFinished(
        provider="model",
        agent_id="a",
        parent_session_id="p",
        child_session_id="c",
        status="ok",
        stop_reason="completed",
        last_assistant_message="hi",
    )
    assert SubagentFinished.parse(finished.to_params()) == finished
    with pytest.raises(SDKProtocolError):
        SubagentFinished.parse({**finished.to_params(), "status": "done"})


def test_turn_end_reasons_read_totally() -> None:
    assert TurnEnd.parse({"kind": "completed"}).kind == "completed"
    aborted = TurnEnd.parse(turn_end_reason("aborted", abort_cause="disposed"))
    assert (aborted.kind, aborted.abort_cause) == ("aborted", "disposed")
    assert TurnEnd.parse({"kind": "aborted", "reason": {"kind": "alien"}}).abort_cause is None
    assert turn_end_reason("error") == {
        "kind": "error",
        "error": {"message": "turn failed", "code": "internal"},
    }
    for weird in (None, "completed", 3, [], {}, {"kind": 1}, {"kind": "exploded"}):
        assert TurnEnd.parse(weird).kind is None  # type: ignore[arg-type]


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=8,
    )
)
def test_turn_end_parse_never_raises(value: object) -> None:
    parsed = TurnEnd.parse(value)  # type: ignore[arg-type]
    assert parsed.kind in (
        None,
        "completed",
        "max-tokens",
        "aborted",
        "blocked",
        "error",
        "interrupted",
    )
