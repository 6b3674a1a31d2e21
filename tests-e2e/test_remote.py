"""ACP and SDK children on another host: a real sshd on 127.0.0.1 plays the remote machine.

The remote tree is everything below the test sshd while a run lives (its session, the remote
guard, the fake child and its `setsid` grandchild); "gone" means every one of those pids has
exited. When the ssh session ends first, the guard is re-parented (on a real host to init,
here to the test process) and finishes its ladder there, so the pids are followed, not the
sshd tree. The process leak guard then checks that nothing of ours is left either.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path

import anyio
import anyio.abc
import psutil
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from subagent_acp import ACPConfig, ACPProvider
from subagent_acp.testing import script_env
from subagent_core import (
    CancelSignal,
    SSHRemote,
    SubagentRegistry,
    SubagentRequest,
    SubagentStartError,
    child_env,
)
from subagent_core.kit import open_managed_process
from subagent_core.testing import TestSSHD, open_test_sshd, sshd_available
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript

pytestmark = pytest.mark.skipif(not sshd_available(), reason="OpenSSH server not installed")

EOF_GRACE, TERM_GRACE, KILL_GRACE = 0.5, 0.5, 3.0
TEARDOWN_SECONDS = EOF_GRACE + TERM_GRACE + KILL_GRACE
DEAF = {
    "hang_at": "prompt",
    "ignore_cancel": True,
    "ignore_eof": True,
    "trap_sigterm": True,
    "grandchild": True,
    "grandchild_setsid": True,
}


@pytest.fixture
async def sshd() -> AsyncGenerator[TestSSHD]:
    # A bound on setup, the test (each bounds itself more tightly) and the teardown together:
    # the server's task group spans the yield, so one scope must enclose all three.
    with anyio.fail_after(120):
        async with open_test_sshd() as server:
            yield server
            await wait_gone(remote_tree(server), 10)


def remote_tree(server: TestSSHD) -> list[int]:
    """Live processes below the test sshd: everything a remote run started."""
    try:
        below = psutil.Process(server.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    alive: list[int] = []
    for proc in below:
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc.pid)
        except psutil.NoSuchProcess:
            continue
    return alive


def agent_processes(tree: list[int]) -> list[int]:
    """The remote guard and what it runs: the tree less sshd's own session processes."""
    agents: list[int] = []
    for pid in tree:
        try:
            if psutil.Process(pid).name() != "sshd":
                agents.append(pid)
        except psutil.NoSuchProcess:
            continue
    return agents


def is_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def wait_gone(pids: list[int], seconds: float) -> None:
    with anyio.fail_after(seconds):
        while [pid for pid in pids if is_alive(pid)]:  # noqa: ASYNC110 - other processes
            await anyio.sleep(0.02)


async def wait_file(path: Path) -> None:
    marker = anyio.Path(path)
    while not await marker.exists():  # noqa: ASYNC110 - written by a remote process
        await anyio.sleep(0.02)


def acp_config(remote: SSHRemote, script: Mapping[str, object]) -> ACPConfig:
    return ACPConfig(
        command=sys.executable,
        args=["-m", "subagent_acp.testing"],
        env=script_env(script),
        remote=remote,
        dispose_eof_grace_seconds=EOF_GRACE,
        dispose_grace_seconds=TERM_GRACE,
        dispose_kill_grace_seconds=KILL_GRACE,
    )


def sdk_config(remote: SSHRemote, script: FakeScript) -> SDKConfig:
    return SDKConfig(
        command=sys.executable,
        args=["-m", "subagent_sdk.testing", "--json", script.to_json()],
        remote=remote,
        dispose_eof_grace_seconds=EOF_GRACE,
        dispose_grace_seconds=TERM_GRACE,
        dispose_kill_grace_seconds=KILL_GRACE,
    )


async def test_an_acp_run_over_ssh_completes_in_the_remote_cwd_with_its_env(
    sshd: TestSSHD, workspace: Path
) -> None:
    registry = SubagentRegistry()
    script = {"text": "hello over ssh", "echo_cwd": True, "echo_env": ["REMOTE_ONLY"]}
    config = acp_config(sshd.remote, script)
    config = ACPConfig(
        command=config.command,
        args=config.args,
        env={**config.env, "REMOTE_ONLY": "it's here"},
        remote=sshd.remote,
        dispose_eof_grace_seconds=EOF_GRACE,
        dispose_grace_seconds=TERM_GRACE,
        dispose_kill_grace_seconds=KILL_GRACE,
    )
    registry.register(ACPProvider(config))
    with anyio.fail_after(30):
        run = await registry.start("acp", SubagentRequest(prompt="hi", cwd=workspace))
        async with run:
            result = await run.result()
        assert result.stop_reason == "completed"
        assert result.diagnostic is None
        assert str(workspace) in result.output
        assert "REMOTE_ONLY=it's here" in result.output
        assert "hello over ssh" in result.output
        await wait_gone(remote_tree(sshd), TEARDOWN_SECONDS)


async def test_an_sdk_run_over_ssh_completes(sshd: TestSSHD, workspace: Path) -> None:
    registry = SubagentRegistry()
    registry.register(SDKProvider(sdk_config(sshd.remote, FakeScript(text="sdk over ssh"))))
    with anyio.fail_after(30):
        run = await registry.start("dsh-sdk", SubagentRequest(prompt="hi", cwd=workspace))
        async with run:
            result = await run.result()
        assert result.stop_reason == "completed"
        assert result.output == "sdk over ssh"
        assert result.diagnostic is None
        await wait_gone(remote_tree(sshd), TEARDOWN_SECONDS)


async def test_cancel_ends_a_deaf_trapping_remote_acp_tree_with_its_setsid_grandchild(
    sshd: TestSSHD, workspace: Path, tmp_path: Path
) -> None:
    prompted = tmp_path / "prompted"
    script = {**DEAF, "markers": {"at": "prompt", "path": str(prompted), "text": "1"}}
    registry = SubagentRegistry()
    registry.register(ACPProvider(acp_config(sshd.remote, script)))
    cancel = CancelSignal()
    with anyio.fail_after(30):
        run = await registry.start(
            "acp", SubagentRequest(prompt="hang", cwd=workspace, cancel=cancel)
        )
        async with run:
            await wait_file(prompted)
            # ssh session, remote guard, the child and its grandchild.
            tree = remote_tree(sshd)
            assert len(tree) >= 4
            cancel.cancel()
            result = await run.result()
            agents = agent_processes(tree)
            assert await run.dispose() is None
            # None means the remote tree is gone too: ssh exits only after the remote guard.
            assert [pid for pid in agents if is_alive(pid)] == []
        assert result.stop_reason == "aborted"
        assert result.diagnostic is None
        await wait_gone(tree, TEARDOWN_SECONDS)


async def test_cancel_ends_a_deaf_trapping_remote_sdk_tree(
    sshd: TestSSHD, workspace: Path, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    script = FakeScript(
        hang_at="prompt",
        ready_file=str(ready),
        ignore_eof=True,
        trap_sigterm=True,
        ignore_shutdown=True,
    )
    registry = SubagentRegistry()
    registry.register(SDKProvider(sdk_config(sshd.remote, script)))
    cancel = CancelSignal()
    with anyio.fail_after(30):
        run = await registry.start(
            "dsh-sdk", SubagentRequest(prompt="hang", cwd=workspace, cancel=cancel)
        )
        async with run:
            await wait_file(ready)
            tree = remote_tree(sshd)
            assert len(tree) >= 3
            cancel.cancel()
            result = await run.result()
            agents = agent_processes(tree)
            assert await run.dispose() is None
            assert [pid for pid in agents if is_alive(pid)] == []
        assert result.stop_reason == "aborted"
        await wait_gone(tree, TEARDOWN_SECONDS)


PARENT = r"""
import json, sys
import anyio
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import SSHRemote, SubagentRegistry, SubagentRequest
from subagent_sdk import SDKConfig, SDKProvider

kind, remote, command, env, cwd = json.loads(sys.argv[1])

async def main():
    registry = SubagentRegistry()
    config = ACPConfig if kind == "acp" else SDKConfig
    provider = ACPProvider if kind == "acp" else SDKProvider
    registry.register(provider(config(
        provider_name=kind, command=command[0], args=command[1:], env=env,
        remote=SSHRemote(**remote))))
    run = await registry.start(kind, SubagentRequest(prompt="hang", cwd=cwd))
    sys.stdout.write("started\n")
    sys.stdout.flush()
    await anyio.sleep_forever()

anyio.run(main)
"""


@pytest.mark.parametrize("kind", ["acp", "sdk"])
async def test_sigkill_of_the_local_parent_ends_the_remote_tree_within_5s(
    sshd: TestSSHD, workspace: Path, tmp_path: Path, kind: str
) -> None:
    """The parent (public API only) is SIGKILLed mid-run: its local guard kills `ssh`, the
    remote guard sees EOF and ends the deaf, TERM-trapping remote tree."""
    ready = tmp_path / "ready"
    if kind == "acp":
        script = {**DEAF, "markers": {"at": "prompt", "path": str(ready), "text": "1"}}
        command = [sys.executable, "-m", "subagent_acp.testing"]
        env = script_env(script)
        least = 4  # session, guard, child, grandchild
    else:
        sdk_script = FakeScript(
            hang_at="prompt",
            ready_file=str(ready),
            ignore_eof=True,
            trap_sigterm=True,
            ignore_shutdown=True,
        )
        command = [sys.executable, "-m", "subagent_sdk.testing", "--json", sdk_script.to_json()]
        env = {}
        least = 3  # session, guard, runtime
    remote = sshd.remote
    payload = json.dumps(
        [
            kind,
            {
                "destination": remote.destination,
                "port": remote.port,
                "identity_file": str(remote.identity_file),
                "options": list(remote.options),
            },
            command,
            env,
            str(workspace),
        ]
    )
    with anyio.fail_after(60):
        parent = await anyio.open_process(
            [sys.executable, "-c", PARENT, payload],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        async with parent:
            assert parent.stdout is not None
            line = await BufferedByteReceiveStream(parent.stdout).receive_until(b"\n", 64)
            assert line == b"started"
            await wait_file(ready)
            tree = remote_tree(sshd)
            assert len(tree) >= least
            assert sys.platform != "win32"
            parent.send_signal(signal.SIGKILL)
            await parent.wait()
            await wait_gone(tree, 5)


async def test_a_wrong_port_is_a_safe_acp_start_error(sshd: TestSSHD, workspace: Path) -> None:
    registry = SubagentRegistry()
    registry.register(ACPProvider(acp_config(sshd.remote_at(closed_port()), {"text": "x"})))
    with anyio.fail_after(30), pytest.raises(SubagentStartError) as caught:
        await registry.start("acp", SubagentRequest(prompt="hi", cwd=workspace))
    assert str(caught.value) == (
        "Subagent failure (provider: acp; stage: initialize; category: process-exit; "
        "exit code: 255)"
    )


async def test_a_wrong_port_is_a_safe_sdk_start_error(sshd: TestSSHD, workspace: Path) -> None:
    registry = SubagentRegistry()
    registry.register(SDKProvider(sdk_config(sshd.remote_at(closed_port()), FakeScript())))
    with anyio.fail_after(30), pytest.raises(SubagentStartError) as caught:
        await registry.start("dsh-sdk", SubagentRequest(prompt="hi", cwd=workspace))
    assert str(caught.value) == (
        "Subagent failure (provider: dsh-sdk; stage: initialize; category: transport; "
        "exit code: 255)"
    )


def closed_port() -> int:
    """A port nothing listens on (bound, then released; the connect is refused)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_harness_delegate_runs_a_harness_toml_provider_on_a_remote_host(
    sshd: TestSSHD, workspace: Path, tmp_path: Path
) -> None:
    """The README's worked example: a `remote = {…}` provider table, `harness delegate`."""
    remote = sshd.remote
    config = tmp_path / "harness.toml"
    config.write_text(
        f"""
[providers.build1]
kind = "acp"
command = {json.dumps(sys.executable)}
args = ["-m", "subagent_acp.testing"]
env = {{ ACP_FAKE_SCRIPT = {json.dumps(json.dumps({"text": "done on build1"}))} }}
dispose_eof_grace_seconds = 2.0
remote = {{ destination = "{remote.destination}", port = {remote.port}, identity_file = {json.dumps(str(remote.identity_file))}, options = {json.dumps(list(remote.options))} }}
""",
        encoding="utf-8",
    )
    argv = [sys.executable, "-m", "harness", "delegate", "go", "--provider", "build1"]
    argv += ["--config", str(config), "--workspace", str(workspace)]
    with anyio.fail_after(60):
        async with open_managed_process(
            argv, env=child_env({}), stdin="devnull", stderr="pipe"
        ) as process:
            out, err = bytearray(), bytearray()

            async def drain(stream: anyio.abc.ByteReceiveStream | None, into: bytearray) -> None:
                assert stream is not None
                async for chunk in stream:
                    into.extend(chunk)

            async with anyio.create_task_group() as group:
                group.start_soon(drain, process.stdout, out)
                group.start_soon(drain, process.stderr, err)
            outcome = await process.wait()
    assert outcome.exit_code == 0, err.decode()
    assert out.decode() == "done on build1\n"


def codex_config(remote: SSHRemote, scenario: Mapping[str, object]):
    from subagent_codex import CodexConfig
    from subagent_codex.testing import scenario_env

    return CodexConfig(
        command=sys.executable,
        args=["-m", "subagent_codex.testing"],
        env=scenario_env(scenario),
        remote=remote,
        dispose_eof_grace_seconds=EOF_GRACE,
        dispose_grace_seconds=TERM_GRACE,
        dispose_kill_grace_seconds=KILL_GRACE,
    )


async def test_a_codex_run_over_ssh_completes(sshd: TestSSHD, workspace: Path) -> None:
    from subagent_codex import CodexProvider

    turn = [{"message": "codex over ssh", "phase": "final_answer"}, {"complete": "completed"}]
    registry = SubagentRegistry()
    registry.register(CodexProvider(codex_config(sshd.remote, {"turn": turn})))
    with anyio.fail_after(30):
        run = await registry.start("codex", SubagentRequest(prompt="hi", cwd=workspace))
        async with run:
            result = await run.result()
        assert (result.stop_reason, result.output, result.diagnostic) == (
            "completed",
            "codex over ssh",
            None,
        )
        await wait_gone(remote_tree(sshd), TEARDOWN_SECONDS)


async def test_cancel_ends_a_deaf_remote_codex_tree_with_its_escapee(
    sshd: TestSSHD, workspace: Path
) -> None:
    from subagent_codex import CodexProvider
    from subagent_core import MessageChunk

    scenario = {"ignore_eof": True, "turn": [{"escapee": True}, {"delta": "up"}, {"hang": True}]}
    cancel = CancelSignal()
    with anyio.fail_after(30):
        run = await CodexProvider(codex_config(sshd.remote, scenario)).start(
            SubagentRequest(prompt="hi", cwd=workspace, cancel=cancel)
        )
        async with run:
            async for event in run.events():
                if isinstance(event, MessageChunk):
                    break
            tree = agent_processes(remote_tree(sshd))
            assert len(tree) >= 3  # the remote guard, the fake and its setsid escapee
            cancel.cancel()
            result = await run.result()
            assert (result.stop_reason, result.output, result.diagnostic) == ("aborted", "up", None)
            assert await run.dispose() is None
        await wait_gone(tree, TEARDOWN_SECONDS)
