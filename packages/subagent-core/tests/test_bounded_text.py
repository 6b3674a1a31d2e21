"""BoundedText: output kept up to a byte bound, cut on a character boundary and marked once."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from subagent_core.kit import DEFAULT_MAX_OUTPUT_BYTES, OUTPUT_TRUNCATION_MARKER, BoundedText


def test_text_within_the_bound_is_kept_whole() -> None:
    text = BoundedText(10)
    assert text.empty
    assert text.add("abc") == "abc"
    assert text.add("") == ""
    assert text.add("defghij") == "defghij"
    assert (text.text, text.cut, text.size) == ("abcdefghij", False, 10)


def test_the_cut_keeps_whole_characters_and_marks_once() -> None:
    text = BoundedText(5)
    assert text.add("ab") == "ab"
    assert text.add("权限") == "权" + OUTPUT_TRUNCATION_MARKER  # 3 bytes fit, the 4th would split
    assert text.add("more") == ""
    assert text.text == "ab权" + OUTPUT_TRUNCATION_MARKER
    assert text.cut
    assert text.size == 5


def test_defaults_and_bad_bounds() -> None:
    assert DEFAULT_MAX_OUTPUT_BYTES == 8 * 1024 * 1024
    assert OUTPUT_TRUNCATION_MARKER == "\n[output truncated]"
    with pytest.raises(ValueError, match="max_bytes must be a non-negative int"):
        BoundedText(-1)


@given(
    pieces=st.lists(st.text(max_size=20), max_size=20),
    limit=st.integers(min_value=0, max_value=100),
)
def test_any_stream_is_a_prefix_within_the_bound_and_add_returns_what_was_appended(
    pieces: list[str], limit: int
) -> None:
    text = BoundedText(limit)
    appended = "".join(text.add(piece) for piece in pieces)
    whole = "".join(pieces)
    assert text.text == appended
    kept = appended.removesuffix(OUTPUT_TRUNCATION_MARKER) if text.cut else appended
    assert whole.startswith(kept)
    assert len(kept.encode("utf-8", "surrogatepass")) <= limit
    assert text.cut == (len(whole.encode("utf-8", "surrogatepass")) > limit)
