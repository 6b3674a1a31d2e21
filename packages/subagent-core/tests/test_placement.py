"""Placements: `remote=` takes any `Placement`, which opens the child in the managed shape."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from subagent_core import LocalPlacement, Placement, SSHRemote
from subagent_core.kit import ChildCommand, ManagedProcess, ProcessOutcome, open_managed_process


class Recording:
    """A placement that records what it was asked to open and runs it on this host."""

    def __init__(self) -> None:
        self.opened: list[tuple[tuple[str, ...], dict[str, str | None], Path | None]] = []

    def check_env(self, env: Mapping[str, str | None]) -> None:
        if "BAD" in env:
            raise ValueError("env names must not be BAD here")

    def open(
        self, argv: Sequence[str], *, env: Mapping[str, str | None], cwd: Path | None, **rest: Any
    ) -> AbstractAsyncContextManager[ManagedProcess]:
        self.opened.append((tuple(argv), dict(env), cwd))
        return LocalPlacement().open(argv, env=env, cwd=cwd, **rest)


def test_local_and_ssh_are_placements() -> None:
    assert isinstance(LocalPlacement(), Placement)
    assert isinstance(SSHRemote(destination="me@build1"), Placement)
    assert isinstance(Recording(), Placement)


def test_a_placement_checks_the_env_it_must_carry() -> None:
    with pytest.raises(ValueError, match=r"^env names must not be BAD"):
        ChildCommand(command="agent", env={"BAD": "1"}, remote=Recording())


async def test_open_managed_process_hands_a_placed_command_to_its_placement(tmp_path: Path) -> None:
    placement = Recording()
    code = (
        "import os, sys; print(os.getcwd(), os.environ['GREETING'], sys.stdin.readline().strip())"
    )
    command = ChildCommand(
        command=sys.executable,
        args=("-c", code),
        env={"GREETING": "hi"},
        cwd=tmp_path,
        remote=placement,
    )
    with anyio.fail_after(30):
        async with open_managed_process(command) as proc:
            assert proc.stdin is not None
            assert proc.stdout is not None
            await proc.stdin.send(b"there\n")
            output = b""
            try:
                while True:
                    output += await proc.stdout.receive()
            except anyio.EndOfStream:
                pass
            assert await proc.wait() == ProcessOutcome(0, None)
    assert output.decode().split() == [str(tmp_path), "hi", "there"]
    assert placement.opened == [(command.argv, {"GREETING": "hi"}, tmp_path)]
    assert proc.confirmed_gone()


def test_only_ssh_has_a_local_command() -> None:
    with pytest.raises(ValueError, match=r"^remote has no local command"):
        ChildCommand(command="agent", remote=Recording()).local_command()
    assert ChildCommand(command="agent", remote=Recording()).local_eof_grace(0.5) == 0.5
