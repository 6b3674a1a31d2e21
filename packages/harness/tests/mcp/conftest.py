"""`harness mcp` under test: a root with scripted fake agents, the server over real stdio.

`open_mcp` starts `python -m harness mcp` as a child of the test and drives it with the official
client (`mcp.ClientSession`) over the child's stdin and stdout; the transport is the test's own
so a test knows the server's pid, can close its stdin, and sees every byte it wrote (each
stdout line must be a JSON-RPC frame; stderr is kept whole). `Root.agent` adds a provider
running the fake ACP child (`subagent_acp.testing`) with a scenario file of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import psutil
import pytest
from mcp.client.session import ClientSession
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCMessage, jsonrpc_message_adapter
from subagent_core.testing import containment_processes
from subagent_core.testing.pytest_plugin import TEST_GRACES

FAKE_CHILD = "subagent_acp.testing"
"""What a fake child's command line holds (how the tests count children)."""


@dataclass
class Root:
    """The server's root (`--workspace`), its `harness.toml`, and the state directory."""

    path: Path
    scripts: Path
    state: Path
    tables: dict[str, str] = field(default_factory=dict[str, str])

    def agent(self, name: str, script: Mapping[str, Any], **keys: Any) -> Path:
        """A provider `name` running the fake ACP child on `script`; returns the script file
        (rewrite it to change the scenario of later calls)."""
        path = self.scripts / f"{name}.json"
        path.write_text(json.dumps(dict(script)), "utf-8")
        env = {"ACP_FAKE_SCRIPT_FILE": str(path)}
        table: dict[str, Any] = {
            "kind": "acp",
            "command": sys.executable,
            "args": ["-m", FAKE_CHILD],
            "env": env,
            **TEST_GRACES,
            **keys,
        }
        self.tables[name] = "\n".join(
            [f"[providers.{name}]", *(f"{key} = {_toml(value)}" for key, value in table.items())]
        )
        (self.path / "harness.toml").write_text("\n\n".join(self.tables.values()) + "\n", "utf-8")
        return path

    def env(self, **extra: str) -> dict[str, str]:
        """The server's environment: this one's, the state directory, `extra` laid over it."""
        return {**os.environ, "HARNESS_STATE_DIR": str(self.state), **extra}


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        items = ", ".join(f"{key} = {_toml(item)}" for key, item in value.items())  # pyright: ignore[reportUnknownVariableType]
        return "{ " + items + " }"
    return json.dumps(value)


@pytest.fixture
def root(tmp_path: Path) -> Root:
    path = tmp_path / "root"
    scripts = tmp_path / "scripts"
    state = tmp_path / "state"
    for folder in (path, scripts, state):
        folder.mkdir()
    return Root(path=path.resolve(), scripts=scripts, state=state)


@pytest.fixture
def git_root(root: Root) -> Root:
    """`root` as a git repository with one (empty) commit."""
    for args in (
        ["init", "-q"],
        [
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "base",
        ],
    ):
        subprocess.run(["git", *args], cwd=root.path, check=True)
    return root


@dataclass
class Connection:
    """One running `harness mcp` and the official client session on its stdio."""

    session: ClientSession
    process: anyio.abc.Process
    received: list[JSONRPCMessage]
    """Every frame the server wrote, in order."""
    sent: list[JSONRPCMessage]
    stdout: bytearray
    stderr: bytearray

    @property
    def pid(self) -> int:
        return self.process.pid

    async def close_stdin(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()

    def traffic(self) -> str:
        """Everything the server wrote on stdout and stderr, as text."""
        return (bytes(self.stdout) + bytes(self.stderr)).decode("utf-8", "replace")


@asynccontextmanager
async def open_mcp(
    root: Root, *args: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[Connection]:
    """`harness mcp -w ROOT ARGS` with an initialized client session; on leaving, stdin is
    closed and the server must exit by itself (a server still alive after 20 s fails)."""
    argv = [sys.executable, "-m", "harness", "mcp", "-w", str(root.path), *args]
    process = await anyio.open_process(argv, env=dict(env or root.env()))
    incoming, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
    received: list[JSONRPCMessage] = []
    sent: list[JSONRPCMessage] = []
    stdout, stderr = bytearray(), bytearray()

    async def pump_stdout() -> None:
        assert process.stdout is not None
        buffer = b""
        async with incoming:
            async for chunk in process.stdout:
                stdout.extend(chunk)
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                    received.append(message)
                    try:
                        await incoming.send(SessionMessage(message))
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        pass
        assert buffer == b"", "the server wrote something that is not a whole line"

    async def pump_stdin() -> None:
        assert process.stdin is not None
        async with outgoing:
            async for item in outgoing:
                sent.append(item.message)
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await process.stdin.send(data.encode() + b"\n")
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass

    async def pump_stderr() -> None:
        assert process.stderr is not None
        async for chunk in process.stderr:
            stderr.extend(chunk)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump_stdout)
            tg.start_soon(pump_stdin)
            tg.start_soon(pump_stderr)
            async with ClientSession(read_stream, write_stream) as session:
                try:
                    with anyio.fail_after(60):
                        await session.initialize()
                except Exception as error:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                        await process.wait()
                    detail = bytes(stderr).decode("utf-8", "replace")[-4000:]
                    raise AssertionError(
                        f"initialize failed (exit {process.returncode}): {detail}"
                    ) from error
                yield Connection(session, process, received, sent, stdout, stderr)
            with anyio.CancelScope(shield=True), anyio.fail_after(20):
                if process.returncode is None:
                    await process.stdin.aclose() if process.stdin is not None else None
                await process.wait()
            tg.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()


def fake_children() -> list[psutil.Process]:
    """The fake agents alive below this test (zombies are gone)."""
    alive: list[psutil.Process] = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if FAKE_CHILD in proc.cmdline() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.Error:
            continue
    return alive


def descendants() -> list[psutil.Process]:
    """Everything alive below this test but its own containment guards."""
    ours = containment_processes()
    alive: list[psutil.Process] = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.pid not in ours and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.Error:
            continue
    return alive


async def settle(predicate: Callable[[], bool], *, seconds: float) -> float:
    """Waits (observing other processes, so polling) until `predicate()` holds; returns how
    long it took. Fails past `seconds`."""
    started = anyio.current_time()
    with anyio.fail_after(seconds):
        while not predicate():  # noqa: ASYNC110 - another process's state; no event to wait on
            await anyio.sleep(0.01)
    return anyio.current_time() - started


class Kit:
    """The helpers a test gets as the `kit` fixture (tests cannot import this module)."""

    open = staticmethod(open_mcp)
    fake_children = staticmethod(fake_children)
    descendants = staticmethod(descendants)
    settle = staticmethod(settle)


@pytest.fixture
def kit() -> Kit:
    return Kit()
