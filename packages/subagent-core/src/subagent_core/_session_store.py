"""Where a resumable session lives between processes: one folder per handle, one writer.

`state_dir/<handle>/` holds the session's record (`record.json`: provider, workspace, the
child's own session id, turns, usage), the child's own state (`child/`: a per-handle config
dir or `CODEX_HOME`, so a resume finds exactly what the first run wrote) and a lock file. The
record is written atomically (a temporary file renamed over it), folders are 0700 and files
0600: it holds the child's session id, which is child-controlled text and is never shown.

A live session holds the handle's lock (an advisory `flock`, released by the kernel when the
process dies, so a SIGKILLed parent never leaves a handle stuck); a second open of a held
handle fails fast as `session-busy`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Final, cast

from ._types import Cost, Usage

RECORD: Final = "record.json"
LOCK: Final = "lock"
CHILD_STATE: Final = "child"

_HANDLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def new_handle() -> str:
    """A fresh handle in the parent's namespace (never the child's own id)."""
    return "s" + uuid.uuid4().hex


def valid_handle(handle: object) -> bool:
    """True for a handle this store can hold (a safe file name, 1-64 characters)."""
    return isinstance(handle, str) and _HANDLE.fullmatch(handle) is not None


class SessionBusyError(Exception):
    """Another live session holds the handle."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """What a session keeps to be resumed (and listed) later."""

    handle: str
    provider: str
    cwd: str | None = None
    """The workspace the child ran in: a resume from another one is refused."""
    child_session: str | None = None
    """The child's own session or thread id: child-controlled, kept only to resume."""
    placement: str | None = None
    label: str | None = None
    turns: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    cost_amount: float | None = None
    cost_currency: str | None = None
    created: float = 0.0
    last_used: float = 0.0

    @property
    def usage(self) -> Usage | None:
        """The session's usage over every turn so far."""
        cost = None
        if self.cost_amount is not None and self.cost_currency is not None:
            cost = Cost(self.cost_amount, self.cost_currency)
        if (
            self.input_tokens is None
            and self.output_tokens is None
            and self.cached_input_tokens is None
            and cost is None
        ):
            return None
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_input_tokens=self.cached_input_tokens,
            cost=cost,
        )

    def with_usage(self, usage: Usage | None) -> SessionRecord:
        """The record with `usage` as its totals."""
        if usage is None:
            return self
        cost = usage.cost
        return replace(
            self,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            cost_amount=None if cost is None else cost.amount,
            cost_currency=None if cost is None else cost.currency,
        )


_FIELD_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "handle": (str,),
    "provider": (str,),
    "cwd": (str, type(None)),
    "child_session": (str, type(None)),
    "placement": (str, type(None)),
    "label": (str, type(None)),
    "turns": (int,),
    "input_tokens": (int, type(None)),
    "output_tokens": (int, type(None)),
    "cached_input_tokens": (int, type(None)),
    "cost_amount": (int, float, type(None)),
    "cost_currency": (str, type(None)),
    "created": (int, float),
    "last_used": (int, float),
}


def _record_from(data: object) -> SessionRecord | None:
    """A record from its JSON, or `None` when it is not one this store wrote."""
    if not isinstance(data, dict):
        return None
    fields = cast(dict[str, object], data)
    if set(fields) - set(_FIELD_TYPES) or not {"handle", "provider"} <= set(fields):
        return None
    for key, value in fields.items():
        if isinstance(value, bool) or not isinstance(value, _FIELD_TYPES[key]):
            return None
    try:
        record = SessionRecord(**fields)  # pyright: ignore[reportArgumentType]
        _ = record.usage  # a stored cost must still be a valid `Cost`
    except (TypeError, ValueError):
        return None
    return record if valid_handle(record.handle) else None


def read_record(folder: Path) -> SessionRecord | None:
    """The record in a handle's folder, or `None` (missing or not ours)."""
    try:
        text = (folder / RECORD).read_text(encoding="utf-8")
        return _record_from(json.loads(text))
    except (OSError, ValueError):
        return None


def list_records(state_dir: Path) -> list[SessionRecord]:
    """Every readable record under `state_dir`, most recently used first."""
    records: list[SessionRecord] = []
    try:
        folders = [entry for entry in state_dir.iterdir() if entry.is_dir()]
    except OSError:
        return records
    for folder in folders:
        record = read_record(folder)
        if record is not None and record.handle == folder.name:
            records.append(record)
    records.sort(key=lambda record: record.last_used, reverse=True)
    return records


class SessionSlot:
    """One handle's place, held by a live session until `release()`.

    Without a state dir the slot holds nothing on disk: the record lives in memory only and
    the handle cannot be resumed.
    """

    def __init__(self, handle: str, folder: Path | None, record: SessionRecord) -> None:
        self.handle = handle
        self.folder = folder
        self.record = record
        self._lock_fd: int | None = None

    @property
    def resumable(self) -> bool:
        """True when the session is kept on disk and can be resumed by handle."""
        return self.folder is not None

    @property
    def child_state(self) -> Path | None:
        """The child's own per-handle state folder (created on first use), if kept on disk."""
        if self.folder is None:
            return None
        path = self.folder / CHILD_STATE
        path.mkdir(mode=0o700, exist_ok=True)
        return path

    def update(self, **changes: object) -> None:
        """Changes the record and writes it (atomically, 0600)."""
        self.record = replace(self.record, **changes)  # pyright: ignore[reportArgumentType]
        self.save()

    def save(self) -> None:
        """Writes the record atomically; a session without a state dir keeps it in memory."""
        if self.folder is None:
            return
        data = json.dumps(asdict(self.record), ensure_ascii=True, sort_keys=True)
        fd, temporary = tempfile.mkstemp(prefix=".record-", dir=self.folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as stream:
                stream.write(data)
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.folder / RECORD)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def lock(self) -> None:
        """Takes the handle's lock for this process.

        Raises:
            SessionBusyError: another live session holds it.
        """
        if self.folder is None or self._lock_fd is not None:
            return
        fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _lock_exclusive(fd)
        except OSError as error:
            os.close(fd)
            raise SessionBusyError from error
        self._lock_fd = fd

    def release(self) -> None:
        """Lets another session open the handle (idempotent)."""
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the lock

    def discard(self) -> None:
        """Removes the handle's folder (a session that never started, or one closed for good)."""
        folder = self.folder
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        self.release()


def _lock_exclusive(fd: int) -> None:
    if sys.platform == "win32":
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _folder(state_dir: Path, handle: str) -> Path:
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder = state_dir / handle
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def new_slot(state_dir: Path | None, provider: str, label: str | None) -> SessionSlot:
    """A fresh handle's slot, locked and recorded (in memory without a state dir).

    Raises:
        OSError: the state dir cannot be written.
    """
    handle = new_handle()
    now = time.time()
    record = SessionRecord(
        handle=handle, provider=provider, label=label, created=now, last_used=now
    )
    folder = None if state_dir is None else _folder(state_dir, handle)
    slot = SessionSlot(handle, folder, record)
    slot.lock()
    slot.save()
    return slot


def claim_slot(state_dir: Path, handle: str) -> SessionSlot | None:
    """The slot of an existing handle, locked; `None` when no record of it exists.

    Raises:
        SessionBusyError: another live session holds it.
    """
    if not valid_handle(handle):
        return None
    folder = state_dir / handle
    record = read_record(folder)
    if record is None or record.handle != handle:
        return None
    slot = SessionSlot(handle, folder, record)
    slot.lock()
    # Re-read under the lock: the last writer may have finished just before we took it.
    slot.record = read_record(folder) or record
    return slot
