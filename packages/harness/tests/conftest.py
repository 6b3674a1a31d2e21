from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from subagent_acp import ACPConfig, ACPProvider
from subagent_acp.testing import fake_child_argv
from subagent_core import child_env
from subagent_core.kit import ManagedProcess, open_managed_process
from subagent_core.testing.pytest_plugin import process_test_fixtures

anyio_backend, process_leak_guard = process_test_fixtures()

HARNESS = (sys.executable, "-m", "harness")
"""The harness as the tests start it by default: this interpreter, `python -m harness`."""

Output = tuple[int, str, str]
"""A finished command: exit code, stdout, stderr."""


@pytest.fixture(autouse=True)
def no_user_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A private, empty user config directory: a developer's own harness.toml never leaks in."""
    home = tmp_path_factory.mktemp("xdg-config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


@pytest.fixture
def wait_for_pid() -> Callable[[Path], Awaitable[int]]:
    """Waits until a command has written its pid (`echo $$ > FILE; exec …`) and returns it."""

    async def wait(path: Path) -> int:
        marker = anyio.Path(path)
        # Another process writes the file: there is no in-process event to wait on.
        while True:
            if await marker.exists():
                text = (await marker.read_text(encoding="utf-8")).strip()
                if text:
                    return int(text)
            await anyio.sleep(0.02)

    return wait


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        encoding="utf-8",
    )
    return done.stdout


@pytest.fixture
def git() -> Callable[..., str]:
    """`git -C REPO ARGS…`; returns its stdout and fails the test on a non-zero exit."""
    return _git


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[Mapping[str, str]], Path]:
    """Makes `tmp_path/repo`, a git repository whose one commit holds `files` (path → text)."""

    def make(files: Mapping[str, str]) -> Path:
        path = tmp_path / "repo"
        path.mkdir()
        _git(path, "init", "-q")
        for name, text in files.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text(text, encoding="utf-8")
        _git(path, "add", ".")
        _git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
        return path

    return make


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The harness's state directory (fan-out records, verify logs, patches) for this test."""
    path = tmp_path / "state"
    monkeypatch.setenv("HARNESS_STATE_DIR", str(path))
    return path


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory `tempfile` makes worktrees and copies in, for the test to check empty."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


@pytest.fixture
def read() -> Callable[[Path], str]:
    """A file's text (UTF-8), read at once: the files are small and no other task runs."""

    def read_text(path: Path) -> str:
        return path.read_text(encoding="utf-8")

    return read_text


@pytest.fixture
def entries() -> Callable[[Path], list[Path]]:
    """What a directory holds (`[]` when the test expects nothing left there)."""

    def listing(folder: Path) -> list[Path]:
        return list(folder.iterdir())

    return listing


@pytest.fixture
def writer() -> Callable[..., ACPProvider]:
    """A fake ACP child named `name` that writes `files` (relative to its cwd) when prompted.

    It answers "`name` done"; `extra` adds knobs to its script (a crash, a hang, …).
    """

    def build(name: str, files: Mapping[str, str], **extra: Any) -> ACPProvider:
        markers = [{"at": "prompt", "path": path, "text": text} for path, text in files.items()]
        script = {"text": f"{name} done", "markers": markers, **extra}
        argv = fake_child_argv()
        return ACPProvider(
            ACPConfig(
                provider_name=name,
                command=argv[0],
                args=[*argv[1:], "--script-json", json.dumps(script)],
                dispose_eof_grace_seconds=0.5,
                dispose_grace_seconds=0.5,
            )
        )

    return build


@pytest.fixture
def acp_table() -> Callable[[str, Mapping[str, Any]], str]:
    """The `[providers.NAME]` table of a harness.toml for a fake ACP child running `script`."""

    def table(name: str, script: Mapping[str, Any]) -> str:
        argv = [*fake_child_argv(), "--script-json", json.dumps(dict(script))]
        # A JSON string is a valid TOML basic string.
        return (
            f'[providers.{name}]\nkind = "acp"\ncommand = {json.dumps(argv[0])}\n'
            f"args = [{', '.join(json.dumps(arg) for arg in argv[1:])}]\n"
            "dispose_eof_grace_seconds = 0.5\ndispose_grace_seconds = 0.5\n"
        )

    return table


@pytest.fixture
def env_for() -> Callable[[Mapping[str, Path]], dict[str, str]]:
    """A scrubbed child environment: TMPDIR `paths["temp"]`, state dir `paths["state"]`."""

    def env(paths: Mapping[str, Path]) -> dict[str, str]:
        return child_env({"TMPDIR": str(paths["temp"]), "HARNESS_STATE_DIR": str(paths["state"])})

    return env


def _open_harness(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    command: Sequence[str] = HARNESS,
) -> AbstractAsyncContextManager[ManagedProcess]:
    return open_managed_process([*command, *args], cwd=cwd, env=env, stdin="devnull", stderr="pipe")


async def _drain(process: ManagedProcess) -> tuple[str, str]:
    out, err = bytearray(), bytearray()

    async def read_into(stream: anyio.abc.ByteReceiveStream, into: bytearray) -> None:
        async for chunk in stream:
            into.extend(chunk)

    assert process.stdout is not None
    assert process.stderr is not None
    async with anyio.create_task_group() as tg:
        tg.start_soon(read_into, process.stdout, out)
        tg.start_soon(read_into, process.stderr, err)
    return out.decode(), err.decode()


@pytest.fixture
def open_harness() -> Callable[..., AbstractAsyncContextManager[ManagedProcess]]:
    """Starts `harness ARGS` (`command`, by default `python -m harness`) with exactly `env`.

    stdin is /dev/null, stdout and stderr are pipes for `drain`; on exit its tree is reaped.
    """
    return _open_harness


@pytest.fixture
def drain() -> Callable[[ManagedProcess], Awaitable[tuple[str, str]]]:
    """Reads a started harness's stdout and stderr to their end, both at once, as text."""
    return _drain


@pytest.fixture
def run_harness() -> Callable[..., Awaitable[Output]]:
    """Runs `harness ARGS` as `open_harness` starts it; returns its exit code, stdout, stderr."""

    async def run(
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None = None,
        command: Sequence[str] = HARNESS,
    ) -> Output:
        async with _open_harness(args, env=env, cwd=cwd, command=command) as process:
            out, err = await _drain(process)
            outcome = await process.wait()
        assert outcome.exit_code is not None
        return outcome.exit_code, out, err

    return run
