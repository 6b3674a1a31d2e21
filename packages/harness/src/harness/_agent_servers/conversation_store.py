"""Stored conversations: each protocol session a server holds, one JSON file under its state dir.

A client's session (ACP `session/new`, an SDK session) is a conversation the server stores so
it survives the process. `harness acp-agent` and `harness sdk-runtime` keep each conversation (its model history, the
transcript an editor replays on `session/load`, mode, model and cwd) here, so a restarted
agent continues where the last one stopped. Files are named by a hash of the session id, so
any id a client sends is a safe file name; writes go to a temporary file that replaces the old
one, so a crash never leaves half a session. Everything is bounded: the transcript keeps its
newest entries, each text is cut, and a file over the size cap is ignored.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

import anyio.to_thread
from model_agent import ChatMessage, HistoryError, parse_history

_log = logging.getLogger("harness.sessions")

SessionMode = Literal["ask", "execute"]
SESSION_FORMAT = 1
"""Version of the file layout; other versions are ignored, never misread."""
MAX_SESSION_FILE_BYTES = 64 * 1024 * 1024
"""A session file larger than this is not read (the history itself is bounded far below)."""
MAX_TRANSCRIPT_ENTRIES = 2000
"""Replay keeps the newest entries of a long session."""
MAX_ENTRY_TEXT_CHARS = 64 * 1024
"""Each replayed text is cut to this many characters."""
MAX_TITLE_CHARS = 80


def now_iso() -> str:
    """The current UTC time as ISO 8601 with a `Z` suffix."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True, kw_only=True)
class TranscriptEntry:
    """One replayable piece of a session, as an editor showed it.

    `role` is `user`, `agent`, `thought` or `tool`; tool entries carry the call's id, title,
    kind, final status, locations (paths) and a bounded text content.
    """

    role: Literal["user", "agent", "thought", "tool"]
    text: str = ""
    call_id: str | None = None
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    paths: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The entry as stored (JSON-ready)."""
        data: dict[str, Any] = {"role": self.role, "text": self.text}
        if self.role == "tool":
            data.update(
                callId=self.call_id,
                title=self.title,
                kind=self.kind,
                status=self.status,
                paths=list(self.paths),
            )
        return data

    @classmethod
    def from_json(cls, value: object) -> TranscriptEntry | None:
        """None for anything malformed (a damaged entry is skipped, not fatal)."""
        if not isinstance(value, dict):
            return None
        data = cast(dict[str, Any], value)
        role = data.get("role")
        text = data.get("text", "")
        if role not in ("user", "agent", "thought", "tool") or not isinstance(text, str):
            return None
        if role != "tool":
            return cls(role=role, text=text)
        strings = {key: data.get(key) for key in ("callId", "title", "kind", "status")}
        if not all(isinstance(item, str) for item in strings.values()):
            return None
        paths = data.get("paths", [])
        if not isinstance(paths, list) or not all(
            isinstance(path, str) for path in cast(list[Any], paths)
        ):
            return None
        return cls(
            role="tool",
            text=text,
            call_id=cast(str, strings["callId"]),
            title=cast(str, strings["title"]),
            kind=cast(str, strings["kind"]),
            status=cast(str, strings["status"]),
            paths=tuple(cast(list[str], paths)),
        )


@dataclass(slots=True, kw_only=True)
class StoredSession:
    """A session as persisted: what a restarted server needs to continue it."""

    session_id: str
    cwd: Path
    mode: SessionMode
    model: str
    history: list[ChatMessage] = field(default_factory=list[ChatMessage])
    """The model conversation without the system prompt (OpenAI chat messages)."""
    transcript: list[TranscriptEntry] = field(default_factory=list[TranscriptEntry])
    title: str | None = None
    updated_at: str = field(default_factory=now_iso)

    def add(self, entry: TranscriptEntry) -> None:
        """Appends to the transcript, merging streamed text into the previous entry."""
        text = entry.text[:MAX_ENTRY_TEXT_CHARS]
        last = self.transcript[-1] if self.transcript else None
        if entry.role in ("agent", "thought") and last is not None and last.role == entry.role:
            merged = (last.text + text)[:MAX_ENTRY_TEXT_CHARS]
            self.transcript[-1] = TranscriptEntry(role=entry.role, text=merged)
        else:
            self.transcript.append(_replace_text(entry, text))
        if len(self.transcript) > MAX_TRANSCRIPT_ENTRIES:
            del self.transcript[: len(self.transcript) - MAX_TRANSCRIPT_ENTRIES]
        if self.title is None and entry.role == "user" and entry.text.strip():
            self.title = " ".join(entry.text.split())[:MAX_TITLE_CHARS]

    def to_json(self) -> dict[str, Any]:
        """The session as stored (JSON-ready)."""
        return {
            "format": SESSION_FORMAT,
            "sessionId": self.session_id,
            "cwd": str(self.cwd),
            "mode": self.mode,
            "model": self.model,
            "title": self.title,
            "updatedAt": self.updated_at,
            "history": self.history,
            "transcript": [entry.to_json() for entry in self.transcript],
        }

    @classmethod
    def from_json(cls, value: object) -> StoredSession | None:
        """None when the file is not a session of this format."""
        if not isinstance(value, dict):
            return None
        data = cast(dict[str, Any], value)
        session_id, cwd, mode, model = (data.get(k) for k in ("sessionId", "cwd", "mode", "model"))
        history, transcript = data.get("history"), data.get("transcript")
        title, updated = data.get("title"), data.get("updatedAt")
        if (
            data.get("format") != SESSION_FORMAT
            or not isinstance(session_id, str)
            or not isinstance(cwd, str)
            or mode not in ("ask", "execute")
            or not isinstance(model, str)
            or not isinstance(history, list)
            or not isinstance(transcript, list)
            or not (title is None or isinstance(title, str))
            or not isinstance(updated, str)
        ):
            return None
        try:
            messages = list(parse_history(cast(object, history)))
        except HistoryError as error:
            _log.warning("session %s: the stored history is damaged (%s)", session_id, error)
            return None
        entries = [TranscriptEntry.from_json(item) for item in cast(list[Any], transcript)]
        return cls(
            session_id=session_id,
            cwd=Path(cwd),
            mode=mode,
            model=model,
            history=messages,
            transcript=[entry for entry in entries if entry is not None],
            title=title,
            updated_at=updated,
        )


def _replace_text(entry: TranscriptEntry, text: str) -> TranscriptEntry:
    if text == entry.text:
        return entry
    return TranscriptEntry(
        role=entry.role,
        text=text,
        call_id=entry.call_id,
        title=entry.title,
        kind=entry.kind,
        status=entry.status,
        paths=entry.paths,
    )


class SessionStore:
    """The sessions of one server kind (`acp` or `sdk`) under a state directory.

    Methods run their file work in a worker thread; a broken or foreign file reads as absent.
    """

    def __init__(self, state_dir: Path, kind: Literal["acp", "sdk"]) -> None:
        """A store of `kind` sessions under `state_dir`."""
        self._dir = state_dir / "sessions" / kind

    @property
    def directory(self) -> Path:
        """Where this kind's session files live."""
        return self._dir

    def _path(self, session_id: str) -> Path:
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
        return self._dir / f"{digest}.json"

    async def save(self, session: StoredSession) -> None:
        """Writes the session atomically; a failure is logged (the turn itself succeeded)."""
        session.updated_at = now_iso()
        data = json.dumps(session.to_json(), ensure_ascii=False).encode("utf-8")
        try:
            await anyio.to_thread.run_sync(self._write, self._path(session.session_id), data)
        except OSError:
            _log.warning("could not persist session %s", session.session_id, exc_info=True)

    def _write(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".session-", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    async def load(self, session_id: str) -> StoredSession | None:
        """The stored session with this id, or None."""
        session = await anyio.to_thread.run_sync(_read, self._path(session_id))
        if session is None or session.session_id != session_id:
            return None
        return session

    async def list(self, *, cwd: Path | None = None) -> list[StoredSession]:
        """Every readable session (optionally only those in `cwd`), newest first."""
        return await anyio.to_thread.run_sync(self._list, cwd)

    def _list(self, cwd: Path | None) -> list[StoredSession]:
        try:
            paths = sorted(self._dir.glob("*.json"))
        except OSError:
            return []
        sessions = [session for path in paths if (session := _read(path)) is not None]
        if cwd is not None:
            sessions = [session for session in sessions if session.cwd == cwd]
        sessions.sort(key=lambda session: (session.updated_at, session.session_id), reverse=True)
        return sessions


def _read(path: Path) -> StoredSession | None:
    try:
        with path.open("rb") as file:
            if os.fstat(file.fileno()).st_size > MAX_SESSION_FILE_BYTES:
                _log.warning("ignoring an oversized session file %s", path.name)
                return None
            data = file.read()
    except OSError:
        return None
    try:
        return StoredSession.from_json(json.loads(data))
    except (ValueError, RecursionError):
        _log.warning("ignoring an unreadable session file %s", path.name)
        return None
