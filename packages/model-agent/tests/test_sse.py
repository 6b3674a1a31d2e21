"""SSE framing and chunk accumulation are independent of how the bytes are split."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from model_agent._round import RoundAccumulator
from model_agent._sse import SSEDecoder

payloads = st.lists(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"),
        max_size=40,
    ),
    max_size=8,
)


def encode(items: list[str], newline: bytes) -> bytes:
    out = b": keep-alive" + newline + newline
    for item in items:
        out += b"data: " + item.encode() + newline + b"event: x" + newline + newline
    return out


@given(payloads, st.sampled_from([b"\n", b"\r\n", b"\r"]), st.lists(st.integers(1, 7), max_size=30))
def test_any_split_of_the_stream_yields_the_same_payloads(
    items: list[str], newline: bytes, cuts: list[int]
) -> None:
    data = encode(items, newline)
    decoder = SSEDecoder()
    seen: list[str] = []
    position = 0
    for cut in cuts:
        seen += decoder.feed(data[position : position + cut])
        position += cut
    seen += decoder.feed(data[position:])
    seen += decoder.flush()
    assert seen == items


def test_multi_line_data_joins_with_newlines_and_comments_are_ignored() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b": ping\n\ndata: a\ndata: b\n\ndata:c\n\n") == ["a\nb", "c"]


@given(st.text(max_size=30), st.text(max_size=30), st.integers(1, 5))
def test_tool_call_deltas_accumulate_by_index(arguments: str, content: str, parts: int) -> None:
    accumulator = RoundAccumulator()
    accumulator.add({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    accumulator.add(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 1,
                                "id": "b",
                                "function": {"name": "second", "arguments": ""},
                            },
                            {"index": 0, "id": "a", "function": {"name": "first", "arguments": ""}},
                        ]
                    },
                }
            ]
        }
    )
    step = max(1, len(arguments) // parts)
    for start in range(0, len(arguments), step):
        piece = arguments[start : start + step]
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        accumulator.add(json.loads(json.dumps({"choices": [{"index": 0, "delta": delta}]})))
    if content:
        accumulator.add({"choices": [{"index": 0, "delta": {"content": content}}]})
    accumulator.add({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    accumulator.add({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}})
    result = accumulator.result()
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("a", "first", arguments),
        ("b", "second", ""),
    ]
    assert result.content == content
    assert accumulator.shown == bool(content)
    assert result.finish_reason == "tool_calls"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3, 4)  # type: ignore[union-attr]
