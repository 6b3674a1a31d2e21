"""Each fan-out's folder under the state directory, and the small record kept there.

    <state>/fanout/<run>/                 fanout_run_dir(run id) in harness._config.paths
    ├── run.json        RunRecord: when, where (workspace, repository, start point, HEAD), how
    │                   (isolation, agents, verify command), and every child's closed facts
    ├── <n>-<agent>.patch         its patch (unless --patches put them elsewhere)
    ├── <n>-<agent>.verify.log    what the verify command printed (for a person)
    └── report.html               `--report` / `harness fanout report`, unless a file was named

The record is what `harness fanout list`, `apply` and `report` read after the run: it holds the
children's outcomes without their answers (`output` is the child's text and stays out), their
files (child-written paths, shown escaped) and the paths of their patches and logs. It is
written when the run starts and again when it ends, each time whole, through a temporary
file and a rename.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, cast

from subagent_core import Cost, SubagentResult, Usage

from harness._config.paths import fanout_runs_root

from ._isolation import FileChange
from ._result import FanoutResult
from ._verify import VerifyOutcome

RECORD_NAME: Final = "run.json"
RECORD_VERSION: Final = 1


class RecordError(Exception):
    """A run's record is missing or unreadable; the message is fixed text."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """One fan-out as its folder remembers it."""

    run: str
    folder: Path
    started_at: str
    """UTC, ISO 8601."""
    workspace: str
    isolation: str
    agents: tuple[str, ...]
    repository: str | None = None
    base: str | None = None
    """The commit the children started from (None outside a repository)."""
    head: str | None = None
    """HEAD when the run started."""
    verify: str | None = None
    """The verify command (the user's own)."""
    verify_timeout_seconds: float | None = None
    protect: tuple[str, ...] = ()
    finished_at: str | None = None
    children: tuple[FanoutResult, ...] = field(default=())

    @property
    def record_path(self) -> Path:
        """Its `run.json`."""
        return self.folder / RECORD_NAME

    def child(self, key: str) -> FanoutResult:
        """The child called `key`: its number (`2`, `#2`) or its agent's name, when unique.

        Raises:
            RecordError: no such child, or the name is shared (the numbers are listed).
        """
        wanted = key.removeprefix("#")
        if wanted.isdigit():
            for outcome in self.children:
                if outcome.number == int(wanted):
                    return outcome
            raise RecordError(f"run {self.run} has no child #{wanted}")
        matches = [outcome for outcome in self.children if outcome.agent == key]
        if not matches:
            names = ", ".join(dict.fromkeys(outcome.agent for outcome in self.children))
            raise RecordError(f"run {self.run} has no child on {key!r} (its agents: {names})")
        if len(matches) > 1:
            numbers = ", ".join(f"#{outcome.number}" for outcome in matches)
            raise RecordError(f"run {self.run} ran {key!r} more than once: name one of {numbers}")
        return matches[0]


def now_iso() -> str:
    """The current UTC time, ISO 8601 to the microsecond: two runs started within one second
    still sort in the order they started (`list_runs`, and the latest run by default)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def write_record(record: RunRecord) -> None:
    """Writes `run.json` whole (a temporary file, then a rename)."""
    record.folder.mkdir(parents=True, exist_ok=True)
    data = json.dumps(record_json(record), indent=1, ensure_ascii=False)
    temporary = record.folder / f".{RECORD_NAME}.{secrets.token_hex(4)}"
    temporary.write_text(data + "\n", encoding="utf-8")
    os.replace(temporary, record.record_path)


def record_json(record: RunRecord) -> dict[str, Any]:
    """The record as its JSON object."""
    return {
        "version": RECORD_VERSION,
        "run": record.run,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "workspace": record.workspace,
        "repository": record.repository,
        "base": record.base,
        "head": record.head,
        "isolation": record.isolation,
        "agents": list(record.agents),
        "verify": record.verify,
        "verify_timeout_seconds": record.verify_timeout_seconds,
        "protect": list(record.protect),
        "children": [_child_json(outcome) for outcome in record.children],
    }


def _child_json(outcome: FanoutResult) -> dict[str, Any]:
    usage = outcome.result.usage
    cost = None if usage is None else usage.cost
    verify = outcome.verify
    return {
        "number": outcome.number,
        "agent": outcome.agent,
        "rank": outcome.rank,
        "stop_reason": outcome.result.stop_reason,
        "diagnostic": outcome.result.diagnostic,
        "timed_out": outcome.timed_out,
        "start_failure": outcome.start_failure,
        "teardown": outcome.teardown,
        "changes_error": outcome.changes_error,
        "wall_seconds": outcome.wall_seconds,
        "usage": None
        if usage is None
        else {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cached_input_tokens": usage.cached_input_tokens,
            "cost": None if cost is None else {"amount": cost.amount, "currency": cost.currency},
        },
        "files": [[change.path, change.added, change.deleted] for change in outcome.files],
        "patch": None if outcome.patch is None else str(outcome.patch),
        "isolation_path": None if outcome.isolation_path is None else str(outcome.isolation_path),
        "branch": outcome.branch,
        "session": outcome.session,
        "verify": None
        if verify is None
        else {
            "status": verify.status,
            "exit_code": verify.exit_code,
            "signal": verify.signal,
            "seconds": verify.seconds,
            "protected": verify.protected,
            "tampered": list(verify.tampered),
            "log": None if verify.log is None else str(verify.log),
            "start_failure": verify.start_failure,
        },
    }


def read_record(folder: Path) -> RunRecord:
    """The record in `folder`.

    Raises:
        RecordError: it is missing or not a record this version wrote.
    """
    try:
        loaded: object = json.loads((folder / RECORD_NAME).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordError(f"no fan-out record in {folder}") from None
    except (OSError, ValueError):
        raise RecordError(f"the fan-out record in {folder} cannot be read") from None
    try:
        return _parse(folder, _obj(loaded))
    except (KeyError, TypeError, ValueError):
        raise RecordError(f"the fan-out record in {folder} is not one this harness wrote") from None


def list_runs(root: Path | None = None) -> list[RunRecord]:
    """Every readable run under `root` (default: `fanout/` under the state directory), newest first."""
    base = root or fanout_runs_root()
    try:
        folders = [entry for entry in base.iterdir() if entry.is_dir()]
    except OSError:
        return []
    records: list[RunRecord] = []
    for folder in folders:
        try:
            records.append(read_record(folder))
        except RecordError:
            continue
    return sorted(records, key=lambda record: (record.started_at, record.run), reverse=True)


def find_run(run: str | None, root: Path | None = None) -> RunRecord:
    """The run called `run` (its id, or a unique start of it), or the newest one.

    Raises:
        RecordError: there is none, or the start names several.
    """
    records = list_runs(root)
    if not records:
        raise RecordError("no fan-out run is recorded yet")
    if run is None:
        return records[0]
    matches = [record for record in records if record.run.startswith(run)]
    exact = [record for record in matches if record.run == run]
    if exact:
        return exact[0]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise RecordError(f"no fan-out run {run!r} (see `harness fanout list`)")
    raise RecordError(f"{run!r} starts several run ids; give more of it")


def _parse(folder: Path, data: dict[str, Any]) -> RunRecord:
    if data["version"] != RECORD_VERSION:
        raise ValueError("version")
    run = _str(data["run"])
    return RunRecord(
        run=run,
        folder=folder,
        started_at=_str(data["started_at"]),
        finished_at=_opt_str(data.get("finished_at")),
        workspace=_str(data["workspace"]),
        repository=_opt_str(data.get("repository")),
        base=_opt_str(data.get("base")),
        head=_opt_str(data.get("head")),
        isolation=_str(data["isolation"]),
        agents=tuple(_str(item) for item in _list(data["agents"])),
        verify=_opt_str(data.get("verify")),
        verify_timeout_seconds=_opt_float(data.get("verify_timeout_seconds")),
        protect=tuple(_str(item) for item in _list(data.get("protect", []))),
        children=tuple(_parse_child(_obj(item), run) for item in _list(data["children"])),
    )


def _parse_child(data: dict[str, Any], run: str) -> FanoutResult:
    usage_data = data.get("usage")
    usage: Usage | None = None
    if usage_data is not None:
        fields = _obj(usage_data)
        cost_data = fields.get("cost")
        cost = None
        if cost_data is not None:
            cost_fields = _obj(cost_data)
            cost = Cost(float(cost_fields["amount"]), _str(cost_fields["currency"]))
        usage = Usage(
            input_tokens=_opt_int(fields.get("input_tokens")),
            output_tokens=_opt_int(fields.get("output_tokens")),
            cached_input_tokens=_opt_int(fields.get("cached_input_tokens")),
            cost=cost,
        )
    files = tuple(
        FileChange(path=_str(entry[0]), added=_opt_int(entry[1]), deleted=_opt_int(entry[2]))
        for entry in (_list(item) for item in _list(data["files"]))
    )
    verify_data = data.get("verify")
    verify: VerifyOutcome | None = None
    if verify_data is not None:
        fields = _obj(verify_data)
        status = _str(fields["status"])
        if status not in ("pass", "fail", "timeout", "tampered", "error", "cancelled"):
            raise ValueError("status")
        log = _opt_str(fields.get("log"))
        verify = VerifyOutcome(
            status=status,  # pyright: ignore[reportArgumentType]
            exit_code=_opt_int(fields.get("exit_code")),
            signal=_opt_str(fields.get("signal")),
            seconds=float(fields.get("seconds", 0.0)),
            protected=int(fields.get("protected", 0)),
            tampered=tuple(_str(item) for item in _list(fields.get("tampered", []))),
            log=None if log is None else Path(log),
            start_failure=_opt_str(fields.get("start_failure")),
        )
    stop_reason = _str(data["stop_reason"])
    patch = _opt_str(data.get("patch"))
    isolation_path = _opt_str(data.get("isolation_path"))
    return FanoutResult(
        number=int(data["number"]),
        agent=_str(data["agent"]),
        result=SubagentResult(
            stop_reason=stop_reason,  # pyright: ignore[reportArgumentType]
            diagnostic=_opt_str(data.get("diagnostic")),
            usage=usage,
        ),
        wall_seconds=float(data["wall_seconds"]),
        files=files,
        patch=None if patch is None else Path(patch),
        isolation_path=None if isolation_path is None else Path(isolation_path),
        branch=_opt_str(data.get("branch")),
        timed_out=bool(data.get("timed_out", False)),
        teardown=_opt_str(data.get("teardown")),
        start_failure=_opt_str(data.get("start_failure")),
        changes_error=_opt_str(data.get("changes_error")),
        session=_opt_str(data.get("session")),
        verify=verify,
        rank=int(data.get("rank", 0)),
        run_id=run,
    )


def _obj(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError("object")
    return cast("dict[str, Any]", value)


def _list(value: object) -> Sequence[object]:
    if not isinstance(value, list):
        raise TypeError("list")
    return cast("list[object]", value)


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("str")
    return value


def _opt_str(value: object) -> str | None:
    return None if value is None else _str(value)


def _opt_int(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("int")
    return value


def _opt_float(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError("float")
    return float(value)
