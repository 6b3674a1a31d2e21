"""`SSHRemote`: the ssh argv, the quoted remote command, validation, and real runs over sshd."""

from __future__ import annotations

import shlex
import signal
import sys
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from subagent_core import SSHRemote
from subagent_core.kit import ChildCommand, ProcessOutcome, open_managed_process
from subagent_core.testing import open_test_sshd, sshd_available

REMOTE = SSHRemote(destination="me@build1")


def remote_words(command: ChildCommand) -> list[str]:
    """The remote command line as the remote shell splits it."""
    return shlex.split(command.local_command().argv[-1])


def test_the_ssh_argv_is_batch_mode_without_a_pty_then_the_destination() -> None:
    remote = SSHRemote(
        destination="me@build1",
        port=2222,
        identity_file=Path("/keys/id"),
        options=("StrictHostKeyChecking=yes",),
    )
    argv = ChildCommand(command="agent", remote=remote).local_command().argv
    assert argv[:-1] == (
        "ssh",
        "-T",
        "-o",
        "BatchMode=yes",
        "-o",
        "ServerAliveInterval=15",
        "-o",
        "ConnectTimeout=10",
        "-o",
        "ForwardAgent=no",
        "-o",
        "ForwardX11=no",
        "-o",
        "ClearAllForwardings=yes",
        "-p",
        "2222",
        "-i",
        "/keys/id",
        "-o",
        "StrictHostKeyChecking=yes",
        "--",
        "me@build1",
    )


def test_the_remote_command_runs_the_guard_around_the_agent_with_env_and_cwd() -> None:
    command = ChildCommand(
        command="my agent",
        args=("--flag", "it's; rm -rf /", "$HOME"),
        env={"TOKEN": "a b'c", "DROP": None},
        cwd=Path("/work space"),
        remote=REMOTE,
    )
    words = remote_words(command)
    assert words[:8] == ["cd", "--", "/work space", "&&", "exec", "env", "-u", "DROP"]
    assert words[8:14] == ["TOKEN=a b'c", "python3", "-I", "-S", "-c", words[13]]
    assert words[13].startswith("import base64,zlib;exec(")
    assert words[14:] == [
        "--eof-grace",
        "0.5",
        "--term-grace",
        "0.5",
        "--",
        "my agent",
        "--flag",
        "it's; rm -rf /",
        "$HOME",
    ]


def test_without_env_or_cwd_the_remote_command_is_just_the_guard() -> None:
    words = remote_words(ChildCommand(command="agent", remote=REMOTE))
    assert words[:2] == ["exec", "python3"]
    assert words[-2:] == ["--", "agent"]


def test_the_local_ssh_client_gets_no_explicit_env_and_no_cwd() -> None:
    local = ChildCommand(
        command="agent", env={"TOKEN": "x"}, cwd=Path("/srv"), remote=REMOTE
    ).local_command()
    assert local.env == {}
    assert local.cwd is None
    assert local.remote is None


def test_a_command_without_remote_is_its_own_local_command() -> None:
    command = ChildCommand(command="agent")
    assert command.local_command() is command


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"destination": ""}, "remote.destination must be"),
        ({"destination": "-oProxyCommand=evil"}, "remote.destination must be"),
        ({"destination": "a b"}, "remote.destination must be"),
        ({"destination": "h", "port": 0}, "remote.port must be"),
        ({"destination": "h", "port": True}, "remote.port must be"),
        ({"destination": "h", "options": "BatchMode=no"}, "remote.options must be"),
        ({"destination": "h", "options": ("-F/tmp/x",)}, "remote.options must be"),
        ({"destination": "h", "options": ("A=b\nC=d",)}, "remote.options must be"),
        ({"destination": "h", "python": ""}, "remote.python must be"),
        ({"destination": "h", "eof_grace_seconds": -1}, "remote.eof_grace_seconds must be"),
    ],
)
def test_unsafe_values_are_refused_without_echoing_them(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=r"^remote") as caught:
        SSHRemote(**fields)  # pyright: ignore[reportArgumentType]
    assert str(caught.value).startswith(message)
    assert "evil" not in str(caught.value)


def test_remote_env_names_must_be_shell_identifiers() -> None:
    with pytest.raises(ValueError, match=r"^env names must be shell identifiers"):
        ChildCommand(command="agent", env={"-u": "x"}, remote=REMOTE)
    with pytest.raises(ValueError, match=r"^remote must be a Placement"):
        ChildCommand(command="agent", remote="me@build1")  # pyright: ignore[reportArgumentType]


needs_sshd = pytest.mark.skipif(not sshd_available(), reason="OpenSSH server not installed")

ECHO = (
    "import os, sys; print(os.getcwd(), os.environ.get('GREETING'), sys.stdin.readline().strip())"
)


@needs_sshd
async def test_a_command_runs_over_ssh_in_its_cwd_with_its_env(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with open_test_sshd() as sshd:
            command = ChildCommand(
                command=sys.executable,
                args=("-c", ECHO),
                env={"GREETING": "hi 'there'"},
                cwd=tmp_path,
                remote=sshd.remote,
            )
            async with open_managed_process(command) as process:
                assert process.stdin is not None
                assert process.stdout is not None
                await process.stdin.send(b"ping\n")
                line = await process.stdout.receive()
                assert await process.wait() == ProcessOutcome(0, None)
    assert line == f"{tmp_path} hi 'there' ping\n".encode()


@needs_sshd
async def test_the_remote_exit_code_comes_back_through_ssh() -> None:
    with anyio.fail_after(30):
        async with open_test_sshd() as sshd:
            command = ChildCommand(
                command=sys.executable, args=("-c", "raise SystemExit(7)"), remote=sshd.remote
            )
            async with open_managed_process(command) as process:
                assert await process.wait() == ProcessOutcome(7, None)


@needs_sshd
async def test_a_wrong_port_is_exit_255() -> None:
    with anyio.fail_after(30):
        async with open_test_sshd() as sshd:
            remote = sshd.remote_at(_closed_port())
            command = ChildCommand(command="true", remote=remote)
            async with open_managed_process(command, stderr="devnull") as process:
                assert await process.wait() == ProcessOutcome(255, None)


@needs_sshd
async def test_a_signal_ending_the_remote_command_is_128_plus_n() -> None:
    kill_self = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    with anyio.fail_after(30):
        async with open_test_sshd() as sshd:
            command = ChildCommand(
                command=sys.executable, args=("-c", kill_self), remote=sshd.remote
            )
            async with open_managed_process(command) as process:
                assert await process.wait() == ProcessOutcome(128 + signal.SIGTERM, None)


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))


@settings(deadline=None, max_examples=40)  # shlex.split of the ~10 KB line is slow
@given(
    args=st.lists(_TEXT, max_size=5),
    env=st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), _TEXT),
)
def test_every_word_reaches_the_remote_shell_unchanged(
    args: list[str], env: dict[str, str]
) -> None:
    """Whatever the args and env values hold (quotes, `$`, `;`, newlines), the remote shell
    splits the command line back into exactly the words we meant."""
    command = ChildCommand(command="agent", args=tuple(args), env=env, remote=REMOTE)
    words = remote_words(command)
    assert words[-len(args) - 1 :] == ["agent", *args]
    if env:
        assert words[2 : 2 + len(env)] == [f"{name}={value}" for name, value in env.items()]
