"""`SSHRemote`: running a `ChildCommand` on another host through OpenSSH, under the guard.

OpenSSH does the transport and the authentication; nothing here speaks its protocol. What ssh
does not give is containment: without a pty it forwards no signal, so killing the local client
leaves the remote side with only stdin EOF or a broken pipe, which EOF-deaf agents ignore. So
the remote command is the containment guard (`subagent_core.guard`, command mode) around the
agent: the guard's source travels inline in the command line (compressed), the remote host
needs only a POSIX shell and Linux `python3`, and the guard kills its whole remote tree after
its stdin ends — the local side closed it, the local ssh client died, or the connection broke.

The remote command line is `cd DIR && exec env [-u NAME] NAME=VALUE … python3 -I -S -c GUARD
--eof-grace S --term-grace S -- CMD ARGS…`, every word `shlex.quote`d, because sshd hands the
string to the remote user's login shell. ssh passes no environment, hence `env`; its values
are in that shell's and `env`'s command lines until `exec` replaces them (moments, visible to
other users of the host meanwhile).
"""

from __future__ import annotations

import base64
import functools
import importlib.resources
import math
import os
import re
import shlex
import zlib
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ._environment import child_env
from ._placement import PlacementStderr, PlacementStdin, PlacementStdout
from ._process import ManagedProcess, open_local

_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

DEFAULT_SERVER_ALIVE_INTERVAL_SECONDS = 15
"""Keepalive probe period: a dead connection ends the local ssh after three unanswered ones."""
DEFAULT_CONNECT_TIMEOUT_SECONDS = 10
"""Bound on the TCP connect and SSH handshake; an unreachable host fails the start (exit 255)."""
DEFAULT_REMOTE_GRACE_SECONDS = 0.5
"""The remote guard's EOF and TERM graces: the same as the local defaults."""
_ROUND_TRIP_SECONDS = 1.0


def _fail(key: str, requirement: str) -> ValueError:
    return ValueError(f"remote.{key} {requirement}")


@dataclass(frozen=True, slots=True, kw_only=True)
class SSHRemote:
    """A host to run a child on, reached with the local OpenSSH client (`ssh`).

    Authentication is OpenSSH's own: `BatchMode=yes` is always set, so a missing key or an
    unknown host key fails the start at once instead of prompting. Host keys are checked as
    the user's ssh config says; add `options=("StrictHostKeyChecking=yes",)` to insist.

    Raises:
        ValueError: a field is of the wrong type or unsafe to put on a command line; the
            message names the field and never echoes the value.
    """

    destination: str
    """`host`, `user@host` or an alias from the ssh config; no whitespace, no leading `-`."""
    port: int | None = None
    """`-p PORT` (1-65535); `None` leaves it to the ssh config (default 22)."""
    identity_file: Path | None = None
    """`-i FILE`: the private key to log in with; `None` leaves it to the ssh config/agent."""
    options: tuple[str, ...] = ()
    """Extra `-o` options as `Name=value` (for example `UserKnownHostsFile=/etc/known`)."""
    python: str = "python3"
    """The remote interpreter that runs the guard (Linux, Python 3.9 or newer)."""
    ssh: str = "ssh"
    """The local OpenSSH client."""
    server_alive_interval_seconds: int = DEFAULT_SERVER_ALIVE_INTERVAL_SECONDS
    """`ServerAliveInterval`: how soon a dead connection is noticed locally."""
    connect_timeout_seconds: int = DEFAULT_CONNECT_TIMEOUT_SECONDS
    """`ConnectTimeout`: bound on reaching the host."""
    eof_grace_seconds: float = DEFAULT_REMOTE_GRACE_SECONDS
    """Remote guard: after its stdin ends, before SIGTERM to the remote tree."""
    term_grace_seconds: float = DEFAULT_REMOTE_GRACE_SECONDS
    """Remote guard: after SIGTERM, before SIGKILL to the remote tree."""

    @property
    def local_eof_grace_seconds(self) -> float:
        """The shortest local EOF grace that lets the remote guard finish its ladder first.

        `ssh` exits only once the remote guard has confirmed its tree gone, so a local ladder
        that waits this long after EOF before signalling `ssh` makes "the local tree is gone"
        mean "the remote tree is gone" too. The extra second covers the connection's round trip.
        """
        return self.eof_grace_seconds + self.term_grace_seconds + _ROUND_TRIP_SECONDS

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        destination = cast(object, self.destination)
        if (
            not isinstance(destination, str)
            or destination == ""
            or destination.startswith("-")
            or any(char.isspace() for char in destination)
            or _CONTROL.search(destination)
        ):
            raise _fail("destination", "must be a host without whitespace, not starting with '-'")
        port = cast(object, self.port)
        if port is not None and (
            isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535
        ):
            raise _fail("port", "must be an int from 1 to 65535, or None")
        identity = cast(object, self.identity_file)
        if identity is not None:
            if not isinstance(identity, str | os.PathLike):
                raise _fail("identity_file", "must be a path, or None")
            text = os.fspath(cast("str | os.PathLike[str]", identity))
            if not isinstance(text, str) or text == "" or _CONTROL.search(text):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise _fail("identity_file", "must be a path, or None")
            set_(self, "identity_file", Path(text).expanduser())
        options = cast(object, self.options)
        if isinstance(options, str | bytes) or not isinstance(options, Sequence):
            raise _fail("options", "must be a sequence of 'Name=value' strings")
        checked: list[str] = []
        for option in cast("Sequence[object]", options):
            if (
                not isinstance(option, str)
                or not re.fullmatch(r"[A-Za-z]+[ =]\S.*", option)
                or _CONTROL.search(option)
            ):
                raise _fail("options", "must be a sequence of 'Name=value' strings")
            checked.append(option)
        set_(self, "options", tuple(checked))
        for key in ("python", "ssh"):
            value: object = getattr(self, key)
            if not isinstance(value, str) or value == "" or _CONTROL.search(value):
                raise _fail(key, "must be a non-empty string without control characters")
        for key in ("server_alive_interval_seconds", "connect_timeout_seconds"):
            number: object = getattr(self, key)
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise _fail(key, "must be a positive int")
        for key in ("eof_grace_seconds", "term_grace_seconds"):
            seconds: object = getattr(self, key)
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, int | float)
                or not math.isfinite(seconds)
                or seconds < 0
            ):
                raise _fail(key, "must be a finite number of seconds, 0 or more")
            set_(self, key, float(seconds))

    def check_env(self, env: Mapping[str, str | None]) -> None:
        """Refuses env names the remote `env` could misread (they must be shell identifiers)."""
        check_remote_env(env)

    def open(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None],
        cwd: Path | None,
        stdin: PlacementStdin,
        stdout: PlacementStdout,
        stderr: PlacementStderr,
        eof_grace_seconds: float,
        term_grace_seconds: float,
        kill_grace_seconds: float,
    ) -> AbstractAsyncContextManager[ManagedProcess]:
        """The local `ssh` client running `argv` under the remote guard, as a managed process.

        The client gets the scrubbed local environment (`env` travels in the remote command
        line, `cwd` is the remote directory) and this process's cwd; every ladder waits at least
        `local_eof_grace_seconds` after EOF, so the remote guard's ladder ends first.
        """
        return open_local(
            self.ssh_argv(argv, env=env, cwd=cwd),
            cwd=None,
            env=child_env({}),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            eof_floor_seconds=self.local_eof_grace_seconds,
            eof_grace_seconds=eof_grace_seconds,
            term_grace_seconds=term_grace_seconds,
            kill_grace_seconds=kill_grace_seconds,
        )

    def ssh_argv(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: Path | None = None,
    ) -> tuple[str, ...]:
        """The local argv: `ssh -T -o BatchMode=yes … -- DESTINATION REMOTE-COMMAND`.

        Our options come first, so `options` cannot turn off `BatchMode` or the forwarding
        bans (ssh keeps the first value of each).

        `argv`, `env` and `cwd` are the remote command's (already checked by `ChildCommand`).
        """
        ssh = [
            self.ssh,
            "-T",
            "-o",
            "BatchMode=yes",
            "-o",
            f"ServerAliveInterval={self.server_alive_interval_seconds}",
            "-o",
            f"ConnectTimeout={self.connect_timeout_seconds}",
            # A child is not trusted with this host: no agent, X11 or port forwarding, whatever
            # the ssh config says (for -o, the first value given wins).
            "-o",
            "ForwardAgent=no",
            "-o",
            "ForwardX11=no",
            "-o",
            "ClearAllForwardings=yes",
        ]
        if self.port is not None:
            ssh += ["-p", str(self.port)]
        if self.identity_file is not None:
            ssh += ["-i", str(self.identity_file)]
        for option in self.options:
            ssh += ["-o", option]
        ssh += ["--", self.destination, self.remote_command(argv, env=env, cwd=cwd)]
        return tuple(ssh)

    def remote_command(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: Path | None = None,
    ) -> str:
        """The shell command line the remote login shell runs (every word quoted)."""
        env = env or {}
        words: list[str] = []
        if cwd is not None:
            words += ["cd", "--", cwd.as_posix(), "&&"]
        words.append("exec")
        if env:
            words.append("env")
            for name, value in env.items():
                if value is None:
                    words += ["-u", name]
            words += [f"{name}={value}" for name, value in env.items() if value is not None]
        words += [self.python, "-I", "-S", "-c", _guard_bootstrap()]
        words += [
            "--eof-grace",
            repr(self.eof_grace_seconds),
            "--term-grace",
            repr(self.term_grace_seconds),
            "--",
            *argv,
        ]
        return " ".join(word if word == "&&" else shlex.quote(word) for word in words)


def check_remote_env(env: Mapping[str, str | None]) -> None:
    """Refuses env names the remote `env` could misread (they must be shell identifiers)."""
    for name in env:
        if _SHELL_NAME.fullmatch(name) is None:
            raise ValueError("env names must be shell identifiers when remote is set")


@functools.cache
def _guard_bootstrap() -> str:
    """`python -c` text that runs the guard's own source, compressed to keep argv short."""
    source = importlib.resources.files("subagent_core").joinpath("guard.py").read_bytes()
    packed = base64.b64encode(zlib.compress(source, 9)).decode("ascii")
    return f'import base64,zlib;exec(zlib.decompress(base64.b64decode("{packed}")))'
