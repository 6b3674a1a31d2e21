"""The verify step: the user's own check run in each child's place, and its protected files.

    Verifier(command, protect, timeout)
      before(place)   hashes of the protected files in the child's fresh place (before it runs)
      check(place, …) once the child settled and its patch was read:
                        the protected files hashed again ─▶ any changed, created or deleted?
                        COMMAND in the child's cwd (`sh -c`, its own process tree, stdin empty,
                        stdout and stderr into a bounded log, `timeout` then the tree is killed)
                      ─▶ VerifyOutcome: pass / fail (exit N) / timeout / tampered / error /
                         cancelled, the exit code, the time, how many protected files changed

Protected files are the defaults (`DEFAULT_PROTECT`: the test configuration files a repository
may have), every `--protect GLOB`, and the files COMMAND names that exist in the place. A GLOB
without a `/` matches a file name at any depth; with one, the path from the place's top (`*`
crosses folders). A child that changed, created or deleted one is `tampered` whatever the
command said: a check the child rewrote proves nothing.

COMMAND's output is the user's own program's: it goes to the log file for a person to read and
nowhere else (no diagnostic, no `--json` field, no model-visible text). Only closed facts leave
this module: the status, the exit code or signal name, seconds, counts and the log's path.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final, Literal

import anyio
import anyio.abc
from subagent_core import CancelSignal, child_env
from subagent_core.kit import SpawnError, open_managed_process

from ._isolation import Place

VerifyStatus = Literal["pass", "fail", "timeout", "tampered", "error", "cancelled"]
"""How a child's verify ended (closed set)."""

DEFAULT_VERIFY_TIMEOUT_SECONDS: Final = 600.0
"""`--verify-timeout`'s default: the command's whole tree is killed after this long."""

DEFAULT_PROTECT: Final[tuple[str, ...]] = (
    "pytest.ini",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "noxfile.py",
    "conftest.py",
    ".coveragerc",
    "package.json",
    "jest.config.*",
    "vitest.config.*",
    "vitest.workspace.*",
    ".mocharc.*",
    "karma.conf.*",
    "playwright.config.*",
    "phpunit.xml",
    "phpunit.xml.dist",
    ".rspec",
)
"""The test configuration files protected by default, by name at any depth: pytest's and its
plugins' (`pytest.ini`, `pyproject.toml`, `setup.cfg`, `tox.ini`, `conftest.py`,
`.coveragerc`), nox's, npm's scripts and the JavaScript runners' configs (jest, vitest, mocha,
karma, Playwright), PHPUnit's and RSpec's."""

LOG_HEAD_BYTES: Final = 256 * 1024
"""The first bytes of the command's output the log keeps."""
LOG_TAIL_BYTES: Final = 256 * 1024
"""The last bytes of the command's output the log keeps (the middle is left out, and said)."""

DRAIN_SECONDS: Final = 1.0
"""How long output may keep flowing after the command exited (a background job holding the
pipe is then killed with the rest of the tree)."""
TERM_GRACE_SECONDS: Final = 2.0
KILL_GRACE_SECONDS: Final = 2.0

_NON_INTERACTIVE: Final[dict[str, str | None]] = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "EDITOR": "true",
    "VISUAL": "true",
    "GIT_ASKPASS": None,
    "SSH_ASKPASS": None,
    "DEBIAN_FRONTEND": "noninteractive",
}
"""As model-agent's `process_execute` runs a command: pagers print through, editors and
credential prompts end at once."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyOutcome:
    """One child's verify: closed facts only (the command's output is in `log`)."""

    status: VerifyStatus
    exit_code: int | None = None
    """The command's exit code (None when it did not exit by itself)."""
    signal: str | None = None
    """The signal that ended it (`SIGSEGV`), when one did."""
    seconds: float = 0.0
    """From the command's start to its end (0 when it did not run)."""
    protected: int = 0
    """How many protected files the place had before the child ran."""
    tampered: tuple[str, ...] = ()
    """The protected paths the child changed, created or deleted (child-controlled names:
    for a person, escaped; never in `--json`)."""
    log: Path | None = None
    """The command's output (bounded), for a person."""
    start_failure: str | None = None
    """Why the command could not start (`bad-cwd`, `not-found`, …), for `error`."""

    @property
    def cell(self) -> str:
        """`pass`, `fail (exit 1)`, `fail (SIGSEGV)`, `timeout`, `tampered`, …"""
        if self.status == "fail":
            if self.exit_code is not None:
                return f"fail (exit {self.exit_code})"
            return f"fail ({self.signal or 'no exit code'})"
        if self.status == "error" and self.start_failure is not None:
            return f"error (did not start: {self.start_failure})"
        return self.status


VERIFY_ORDER: Final[dict[str, int]] = {
    "pass": 0,
    "fail": 1,
    "timeout": 2,
    "error": 3,
    "cancelled": 4,
    "tampered": 6,
}
"""Best first. A child whose check did not run at all (it never started) sits at 5."""


def verify_order(outcome: VerifyOutcome | None) -> int:
    """Where a verify outcome ranks (lower is better); None (not run) before `tampered`."""
    return 5 if outcome is None else VERIFY_ORDER[outcome.status]


ProtectedState = dict[str, str]
"""A place's protected files: repository-relative POSIX path → a digest of its content."""


class Verifier:
    """The verify step of one fan-out: COMMAND, its protected files, its bound."""

    def __init__(
        self,
        command: str,
        *,
        protect: Sequence[str] = (),
        timeout_seconds: float = DEFAULT_VERIFY_TIMEOUT_SECONDS,
        log_dir: Path,
    ) -> None:
        if not command.strip():
            raise ValueError("the verify command is empty")
        if "\0" in command:
            raise ValueError("the verify command holds a NUL byte")
        if timeout_seconds <= 0:
            raise ValueError("the verify timeout must be positive")
        self.command = command
        self.timeout_seconds = timeout_seconds
        self.log_dir = log_dir
        self.patterns: tuple[str, ...] = (*DEFAULT_PROTECT, *protect)

    def named_files(self, place: Place) -> tuple[str, ...]:
        """The files COMMAND names that exist in `place` (repository-relative POSIX paths).

        Every word of the command (and the value of a `--flag=value` word) is tried as a path
        from the child's cwd; only those inside the place's top that are files count.
        """
        try:
            words = shlex.split(self.command, comments=True)
        except ValueError:
            words = self.command.split()
        candidates = [part for word in words for part in (word, word.partition("=")[2]) if part]
        root = os.path.realpath(place.root)
        found: list[str] = []
        for word in candidates:
            path = os.path.realpath(os.path.join(place.cwd, word))
            if os.path.commonpath([root, path]) != root or not os.path.isfile(path):
                continue
            found.append(PurePosixPath(Path(path).relative_to(root)).as_posix())
        return tuple(dict.fromkeys(found))

    async def before(self, place: Place) -> ProtectedState:
        """The protected files of a fresh place, hashed (run before the child starts)."""
        named = self.named_files(place)
        return await anyio.to_thread.run_sync(_hash_protected, place.root, self.patterns, named)

    async def check(
        self,
        place: Place,
        before: ProtectedState,
        log_name: str,
        cancel: CancelSignal,
    ) -> VerifyOutcome:
        """Hashes the protected files again, then runs COMMAND in the child's cwd.

        `cancel` (the fan-out's) stops the command and ends the check `cancelled`.
        """
        named = tuple(before)  # the command's files as they were: their absence is a deletion
        after = await anyio.to_thread.run_sync(_hash_protected, place.root, self.patterns, named)
        changed = before.keys() | after.keys()
        tampered = tuple(sorted(path for path in changed if before.get(path) != after.get(path)))
        if cancel.cancelled:
            return VerifyOutcome(status="cancelled", protected=len(before), tampered=tampered)
        await anyio.Path(self.log_dir).mkdir(parents=True, exist_ok=True)
        log = self.log_dir / log_name
        ran = await run_command(self.command, place.cwd, log, self.timeout_seconds, cancel)
        status = ran.status
        if tampered:
            status = "tampered"
        return VerifyOutcome(
            status=status,
            exit_code=ran.exit_code,
            signal=ran.signal,
            seconds=ran.seconds,
            protected=len(before),
            tampered=tampered,
            log=log,
            start_failure=ran.start_failure,
        )


@dataclass(frozen=True, slots=True)
class CommandRun:
    """How one run of the command ended."""

    status: VerifyStatus
    exit_code: int | None
    signal: str | None
    seconds: float
    start_failure: str | None = None


def shell_argv(command: str) -> list[str]:
    """`command` through the platform's shell, non-interactively."""
    if sys.platform == "win32":
        return [os.environ.get("COMSPEC", "cmd.exe"), "/d", "/s", "/c", command]
    return ["/bin/sh", "-c", command]


async def run_command(
    command: str, cwd: Path, log: Path, timeout_seconds: float, cancel: CancelSignal
) -> CommandRun:
    """Runs `command` in `cwd` in its own process tree; its output goes to `log` (bounded).

    The tree is killed after `timeout_seconds`, on `cancel`, and in any case before this
    returns (a background job the command left behind included).
    """
    started = anyio.current_time()
    sink = BoundedLog(log)
    explicit: dict[str, str | None] = {name: None for name in os.environ if name.startswith("GIT_")}
    explicit.update(_NON_INTERACTIVE)
    try:
        async with open_managed_process(
            shell_argv(command),
            cwd=cwd,
            env=child_env(explicit),
            stdin="devnull",
            stdout="pipe",
            stderr="pipe",
            eof_grace_seconds=0.0,
            term_grace_seconds=TERM_GRACE_SECONDS,
            kill_grace_seconds=KILL_GRACE_SECONDS,
        ) as process:
            exited = False
            async with anyio.create_task_group() as pumps:
                pumps.start_soon(_pump, process.stdout, sink)
                pumps.start_soon(_pump, process.stderr, sink)
                with cancel.cancel_scope(deadline=started + timeout_seconds):
                    await process.wait()
                    exited = True
                if exited:
                    # Output still in the pipes is read; a job holding them open is not waited
                    # for past the grace.
                    with anyio.move_on_after(DRAIN_SECONDS, shield=True):
                        await sink.drained(2)
                await process.terminate(0.0, TERM_GRACE_SECONDS, KILL_GRACE_SECONDS)
                pumps.cancel_scope.cancel()
            outcome = process.outcome
    except SpawnError as error:
        await sink.close()
        return CommandRun("error", None, None, 0.0, start_failure=error.reason)
    seconds = anyio.current_time() - started
    await sink.close()
    if not exited:
        return CommandRun("cancelled" if cancel.cancelled else "timeout", None, None, seconds)
    exit_code = None if outcome is None else outcome.exit_code
    signal = None if outcome is None else outcome.signal
    return CommandRun("pass" if exit_code == 0 else "fail", exit_code, signal, seconds)


async def _pump(stream: anyio.abc.ByteReceiveStream | None, sink: BoundedLog) -> None:
    try:
        if stream is not None:
            async for chunk in stream:
                sink.feed(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    finally:
        sink.ended()


class BoundedLog:
    """The command's output as a file: the first `LOG_HEAD_BYTES`, then the last
    `LOG_TAIL_BYTES` after a `[... N bytes left out ...]` line when there was more."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0
        self._ended = 0
        self._changed = anyio.Event()

    def feed(self, chunk: bytes) -> None:
        self._total += len(chunk)
        room = LOG_HEAD_BYTES - len(self._head)
        if room > 0:
            self._head.extend(chunk[:room])
            chunk = chunk[room:]
        if chunk:
            self._tail.extend(chunk)
            if len(self._tail) > LOG_TAIL_BYTES:
                del self._tail[: len(self._tail) - LOG_TAIL_BYTES]

    def ended(self) -> None:
        self._ended += 1
        self._changed.set()

    async def drained(self, streams: int) -> None:
        """Returns once `streams` pipes reached their end."""
        while self._ended < streams:
            self._changed = anyio.Event()
            await self._changed.wait()

    async def close(self) -> None:
        """Writes the file (once)."""
        left_out = self._total - len(self._head) - len(self._tail)
        parts = [bytes(self._head)]
        if left_out > 0:
            parts.append(f"\n[... {left_out} bytes left out ...]\n".encode())
        parts.append(bytes(self._tail))
        data = b"".join(parts)
        await anyio.to_thread.run_sync(self._path.write_bytes, data)


def _hash_protected(root: Path, patterns: Sequence[str], named: Sequence[str]) -> ProtectedState:
    """Every file under `root` (`.git` left out) matching a pattern or named, with a digest.

    A symlink is hashed by its target text, not followed; folders are not followed through
    links, so a child cannot make the walk leave its place.
    """
    by_name = [pattern for pattern in patterns if "/" not in pattern]
    by_path = [pattern.removeprefix("./").lstrip("/") for pattern in patterns if "/" in pattern]
    exact = set(named)
    state: ProtectedState = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if name != ".git"]
        relative = Path(folder).relative_to(root)
        for name in files:
            if name == ".git":
                continue
            path = (relative / name).as_posix()
            if (
                path in exact
                or any(fnmatch.fnmatchcase(name, pattern) for pattern in by_name)
                or any(fnmatch.fnmatchcase(path, pattern) for pattern in by_path)
            ):
                state[path] = _digest(Path(folder) / name)
    return state


def _digest(path: Path) -> str:
    try:
        if path.is_symlink():
            return "link:" + hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
        sha = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
        return "file:" + sha.hexdigest()
    except OSError:
        return "unreadable"
