"""The servers' session store: round trips, bounds, damaged files, listing."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from harness._agent_servers.conversation_store import (
    MAX_ENTRY_TEXT_CHARS,
    MAX_TRANSCRIPT_ENTRIES,
    SessionStore,
    StoredSession,
    TranscriptEntry,
)


def _session(session_id: str, cwd: Path) -> StoredSession:
    return StoredSession(session_id=session_id, cwd=cwd, mode="execute", model="m")


async def test_a_session_round_trips_with_history_and_transcript(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, "acp")
    session = _session("sess_1", tmp_path)
    session.history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    session.add(TranscriptEntry(role="user", text="hi"))
    session.add(TranscriptEntry(role="agent", text="hel"))
    session.add(TranscriptEntry(role="agent", text="lo"))
    session.add(
        TranscriptEntry(
            role="tool",
            text="out",
            call_id="c1",
            title="ls",
            kind="execute",
            status="completed",
            paths=("/w/a",),
        )
    )
    with anyio.fail_after(10):
        await store.save(session)
        loaded = await store.load("sess_1")
    assert loaded is not None
    assert loaded.history == session.history
    assert loaded.title == "hi"
    assert [(e.role, e.text) for e in loaded.transcript] == [
        ("user", "hi"),
        ("agent", "hello"),
        ("tool", "out"),
    ]
    assert loaded.transcript[2].paths == ("/w/a",)


async def test_any_session_id_is_a_safe_file_name(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, "sdk")
    with anyio.fail_after(10):
        await store.save(_session("../../etc/passwd", tmp_path))
        assert await store.load("../../etc/passwd") is not None
        assert await store.load("other") is None
    files = list(store.directory.iterdir())
    assert len(files) == 1
    assert files[0].parent == store.directory


async def test_damaged_files_read_as_absent(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, "acp")
    with anyio.fail_after(10):
        await store.save(_session("good", tmp_path))
        (store.directory / "junk.json").write_text("{not json", encoding="utf-8")
        (store.directory / "other.json").write_text(json.dumps({"format": 99}), encoding="utf-8")
        bad = _session("bad-history", tmp_path).to_json()
        bad["history"] = [{"role": "tool", "content": "x", "tool_call_id": "nope"}]
        (store.directory / "bad.json").write_text(json.dumps(bad), encoding="utf-8")
        listed = await store.list()
    assert [s.session_id for s in listed] == ["good"]


async def test_listing_is_newest_first_and_filters_by_cwd(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, "acp")
    other = tmp_path / "other"
    with anyio.fail_after(10):
        for name, cwd in (("a", tmp_path), ("b", other), ("c", tmp_path)):
            await store.save(_session(name, cwd))
        everything = await store.list()
        here = await store.list(cwd=tmp_path)
    assert next(s.session_id for s in everything) == "c"
    assert {s.session_id for s in here} == {"a", "c"}


def test_the_transcript_is_bounded(tmp_path: Path) -> None:
    session = _session("s", tmp_path)
    session.add(TranscriptEntry(role="agent", text="x" * (MAX_ENTRY_TEXT_CHARS + 10)))
    assert len(session.transcript[0].text) == MAX_ENTRY_TEXT_CHARS
    for index in range(MAX_TRANSCRIPT_ENTRIES + 5):
        session.add(TranscriptEntry(role="user", text=str(index)))
    assert len(session.transcript) == MAX_TRANSCRIPT_ENTRIES
    assert session.transcript[-1].text == str(MAX_TRANSCRIPT_ENTRIES + 4)
