"""The line reader and frame classification, fed exact byte chunks."""

from __future__ import annotations

import json
from collections.abc import Sequence

import anyio
import anyio.abc
import pytest
from hypothesis import given
from hypothesis import strategies as st
from subagent_sdk.wire import (
    ErrorObject,
    FrameReader,
    FrameTooLargeError,
    Notification,
    Request,
    Response,
    encode_frame,
    new_request_id,
)


class _Chunks(anyio.abc.ByteReceiveStream):
    """Delivers exactly the given chunks, one per receive, then end of stream."""

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self._chunks = list(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)

    async def aclose(self) -> None:
        self._chunks.clear()


async def _frames(chunks: Sequence[bytes], **options: int) -> list[object]:
    with anyio.fail_after(5):
        return [frame async for frame in FrameReader(_Chunks(chunks), **options)]


async def test_a_character_split_across_reads_survives() -> None:
    line = encode_frame({"jsonrpc": "2.0", "method": "m", "params": {"text": "héllo 权限 🙂"}})
    cut = line.index("权".encode()) + 1
    frames = await _frames([line[:cut], line[cut:]])
    assert frames == [Notification("m", {"text": "héllo 权限 🙂"})]


async def test_garbage_blank_and_non_object_lines_are_skipped_and_cr_tolerated() -> None:
    chunks = [
        b"not json\n",
        b'[1,2]\n42\n"s"\nnull\n{broken\n',
        b"\n   \n\r\n",
        b"\xff\xfe\x80\n",
        b'{"jsonrpc":"2.0"}\n',
        b'{"jsonrpc":"2.0","method":7}\n',
        b'{"jsonrpc":"2.0","method":"a","params":{"x":NaN}}\n',
        b'{"jsonrpc":"2.0","method":"ok","params":[1]}\r\n',
    ]
    assert await _frames(chunks) == [Notification("ok", {})]


async def test_classification_is_structural() -> None:
    chunks = [
        b'{"id":"r1","method":"m","params":{"a":1}}\n',
        b'{"id":7,"method":"m"}\n',
        b'{"id":"r2","result":{"ok":true}}\n',
        b'{"id":"r3","method":5,"result":1}\n',
        b'{"id":"r4","error":{"code":-32603,"message":"no","data":{"d":[1]}}}\n',
        b'{"id":null,"error":"odd"}\n',
        b'{"method":"n","params":"not an object"}\n',
    ]
    assert await _frames(chunks) == [
        Request("r1", "m", {"a": 1}),
        Request(7, "m", {}),
        Response("r2", {"ok": True}),
        Response("r3", 1),
        Response("r4", None, ErrorObject(-32603, "no", {"d": [1]})),
        Response(None, None, ErrorObject(-32603, "", None)),
        Notification("n", {}),
    ]


async def test_an_unterminated_last_line_is_still_read() -> None:
    assert await _frames([b'{"method":"tail"}']) == [Notification("tail", {})]


async def test_a_line_over_the_limit_raises_and_can_be_skipped() -> None:
    with pytest.raises(FrameTooLargeError):
        await _frames([b'{"method":"ok"}\n', b"x" * 100 + b"\n"], max_frame_bytes=64)
    # Also before its newline arrives: the reader never buffers past the limit.
    with pytest.raises(FrameTooLargeError):
        await _frames([b"y" * 65], max_frame_bytes=64)
    # The over-long line was discarded whole: a server may go on with the next frame.
    reader = FrameReader(
        _Chunks([b"z" * 100, b"z" * 100 + b'\n{"method":"next"}\n']), max_frame_bytes=64
    )
    with anyio.fail_after(5):
        with pytest.raises(FrameTooLargeError):
            await reader.receive()
        assert await reader.receive() == Notification("next", {})


async def test_a_line_of_exactly_the_limit_is_accepted() -> None:
    line = encode_frame({"method": "m", "params": {"p": "z" * 40}})[:-1]
    assert await _frames([line + b"\n"], max_frame_bytes=len(line)) == [
        Notification("m", {"p": "z" * 40})
    ]


def test_request_ids_are_req_and_32_lowercase_hex() -> None:
    ids = {new_request_id() for _ in range(100)}
    assert len(ids) == 100
    for request_id in ids:
        assert request_id.startswith("req_")
        assert len(request_id) == 36
        assert all(c in "0123456789abcdef" for c in request_id[4:])


def test_frames_are_compact_utf8_lines() -> None:
    assert encode_frame({"a": "权", "b": [1, 2]}) == '{"a":"权","b":[1,2]}\n'.encode()
    # A lone surrogate cannot be UTF-8: it is escaped instead of failing.
    assert encode_frame({"a": "\ud800"}) == b'{"a":"\\ud800"}\n'


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@given(
    params=st.dictionaries(st.text(max_size=8), _json_values, max_size=4),
    cuts=st.lists(st.integers(0, 400), max_size=5),
)
async def test_framing_round_trips_however_the_bytes_are_cut(
    params: dict[str, object], cuts: list[int]
) -> None:
    data = encode_frame({"jsonrpc": "2.0", "method": "m", "params": params}) * 2  # type: ignore[dict-item]
    points = sorted({min(c, len(data)) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    assert (
        await _frames([piece for piece in pieces if piece])
        == [Notification("m", json.loads(json.dumps(params)))] * 2
    )


async def test_deeply_nested_lines_are_skipped() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    nested = b'{"method":"m","params":' * 50_000 + b"{}" + b"}" * 50_000
    assert await _frames([deep + b"\n", nested + b"\n", b'{"method":"after"}\n']) == [
        Notification("after", {})
    ]
