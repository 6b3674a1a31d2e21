"""A real OpenSSH server on 127.0.0.1 for tests of remote children (`open_test_sshd`).

Keys and config live in a temporary directory: a generated host key (pinned in a
`known_hosts` file, so the client checks it strictly) and a generated client key. Needs
`/usr/sbin/sshd`, `ssh-keygen` and `ssh`; as root it logs in as root (`/run/sshd` is created
when missing), otherwise as the current user.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from subagent_core._remote import SSHRemote

SSHD = "/usr/sbin/sshd"
_READY = b"Server listening on 127.0.0.1"
_STOP_SECONDS = 5.0


def sshd_available() -> bool:
    """True when this host can run the test server (sshd, ssh-keygen and ssh are installed)."""
    return (
        os.name == "posix"
        and os.access(SSHD, os.X_OK)
        and shutil.which("ssh-keygen") is not None
        and shutil.which("ssh") is not None
    )


@dataclass(frozen=True, slots=True)
class TestSSHD:
    """A running test server: where it listens and how to reach it."""

    __test__ = False  # not a pytest test class

    port: int
    """The TCP port on 127.0.0.1."""
    pid: int
    """The listening sshd (its sessions are its descendants)."""
    directory: Path
    """Keys, config, `known_hosts` and the server log (`sshd.log`)."""
    remote: SSHRemote
    """An `SSHRemote` for this server with the client key and the pinned host key."""

    def remote_at(self, port: int) -> SSHRemote:
        """The same remote with another port (a wrong one, for failure tests)."""
        remote = self.remote
        return SSHRemote(
            destination=remote.destination,
            port=port,
            identity_file=remote.identity_file,
            options=remote.options,
        )


def _is_root() -> bool:
    if sys.platform == "win32":
        return False
    return os.geteuid() == 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _keygen(path: Path) -> None:
    await anyio.run_process(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "subagent-test", "-f", str(path)],
        stdin=None,
    )


@asynccontextmanager
async def open_test_sshd() -> AsyncGenerator[TestSSHD]:
    """Starts sshd on 127.0.0.1 (a free port) and stops it on exit (SIGTERM, then SIGKILL)."""
    with tempfile.TemporaryDirectory(prefix="subagent-sshd-") as name:
        directory = Path(name)
        host_key, client_key = directory / "host_key", directory / "client_key"
        await _keygen(host_key)
        await _keygen(client_key)
        port = _free_port()
        config, remote = await anyio.to_thread.run_sync(_configure, directory, port)
        log = (directory / "sshd.log").open("wb")
        process = await anyio.open_process(
            [SSHD, "-D", "-e", "-f", str(config)],
            stdin=None,
            stdout=log,
            stderr=-1,  # subprocess.PIPE: read until it listens, then copied to the log
        )
        try:
            async with anyio.create_task_group() as group:
                assert process.stderr is not None
                stream = BufferedByteReceiveStream(process.stderr)
                await _wait_listening(stream, log)
                group.start_soon(_copy, stream, log)
                try:
                    yield TestSSHD(port, process.pid, directory, remote)
                finally:
                    group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
                log.close()


def _configure(directory: Path, port: int) -> tuple[Path, SSHRemote]:
    """Writes the server config, `authorized_keys` and the pinned `known_hosts`."""
    host_key, client_key = directory / "host_key", directory / "client_key"
    (directory / "authorized_keys").write_bytes(client_key.with_suffix(".pub").read_bytes())
    if _is_root():
        Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
    user = "root" if _is_root() else getpass.getuser()
    config = directory / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {host_key}",
                f"AuthorizedKeysFile {directory / 'authorized_keys'}",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PubkeyAuthentication yes",
                "PermitRootLogin prohibit-password",
                "StrictModes no",
                "UsePAM no",
                f"PidFile {directory / 'sshd.pid'}",
                "LogLevel VERBOSE",
                "",
            ]
        ),
        encoding="utf-8",
    )
    public_host_key = host_key.with_suffix(".pub").read_text(encoding="utf-8").split()
    (directory / "known_hosts").write_text(
        f"[127.0.0.1]:{port} {public_host_key[0]} {public_host_key[1]}\n", encoding="utf-8"
    )
    remote = SSHRemote(
        destination=f"{user}@127.0.0.1",
        port=port,
        identity_file=client_key,
        options=(
            "StrictHostKeyChecking=yes",
            f"UserKnownHostsFile={directory / 'known_hosts'}",
            "IdentitiesOnly=yes",
            "LogLevel=ERROR",
        ),
    )
    return config, remote


async def _wait_listening(stream: BufferedByteReceiveStream, log: BinaryIO) -> None:
    while True:
        try:
            line = await stream.receive_until(b"\n", 65536)
        except (anyio.EndOfStream, anyio.IncompleteRead):
            raise RuntimeError("sshd exited before listening (see sshd.log)") from None
        _write(log, line)
        if _READY in line:
            return


async def _copy(stream: BufferedByteReceiveStream, log: BinaryIO) -> None:
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
        while True:
            _write(log, await stream.receive())


def _write(log: BinaryIO, data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        log.write(data + (b"" if data.endswith(b"\n") else b"\n"))
        log.flush()


async def _stop(process: anyio.abc.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        with anyio.move_on_after(_STOP_SECONDS):
            await process.wait()
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with anyio.move_on_after(_STOP_SECONDS):
                await process.wait()
    with contextlib.suppress(OSError):
        await process.aclose()
