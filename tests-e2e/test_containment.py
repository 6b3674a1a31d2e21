"""Containment end to end: escapee children through ACP, SDK and `process_execute`.

Every child here misbehaves before it answers — 50 `setsid` sleepers, a double-forked daemon
holding or closing stdout, a daemon started after `env -i`, a TERM-trapping EOF-deaf member, a
grandchild holding stdout while the leader exits — and after the run settles and is disposed
nothing of it is alive (zombies count as gone). Public APIs only. Linux (the guard).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import psutil
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from model_agent.tools import ProcessExecuteTool, RequestContext
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import CancelSignal, SubagentRegistry, SubagentRequest, SubagentResult
from subagent_core.testing import live_descendants, poll_until
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the containment guard is Linux"
)

GRACES = {"dispose_eof_grace_seconds": 0.5, "dispose_grace_seconds": 0.5}
"""The core defaults (EOF 0.5 s, TERM 0.5 s): dispose of a deaf child takes ~1 s."""

ESCAPE = r'''
"""Misbehaves as MODE, writes the pids it left behind to PIDFILE, then execs CMD (if any)."""
import os, signal, sys

mode, pidfile, command = sys.argv[1], sys.argv[2], sys.argv[4:]


def daemon(keep_stdout, argv=None):
    """fork, setsid, fork: returns the daemon's pid (it is nobody's child but init's)."""
    read_end, write_end = os.pipe()
    if os.fork() == 0:
        os.setsid()
        pid = os.fork()
        if pid == 0:
            if not keep_stdout:
                os.close(1)
            if argv:
                os.execv(argv[0], argv)
            while True:
                signal.pause()
        os.write(write_end, str(pid).encode())
        os._exit(0)
    os.wait()
    os.close(write_end)
    return int(os.read(read_end, 64))


pids = []
if mode == "sleepers":
    pids = [os.posix_spawn("/bin/sleep", ["sleep", "1000"], dict(os.environ), setsid=True)
            for _ in range(50)]
elif mode in ("daemon-hold", "daemon-close"):
    pids = [daemon(mode == "daemon-hold")]
elif mode == "env-clear":
    # `env -i` first, then the cleared process daemonises (it keeps stdout).
    pids = [daemon(True, ["/usr/bin/env", "-i", "/bin/sleep", "1000"])]
elif mode == "deaf":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited across exec: the leader too
    pids = [os.posix_spawn("/bin/sleep", ["sleep", "1000"], dict(os.environ), setsid=True)]
elif mode == "holder":
    pids = [os.posix_spawn("/bin/sleep", ["sleep", "1000"], dict(os.environ), setsid=True)]
with open(pidfile, "w") as file:
    file.write(" ".join(map(str, pids)))
if command:
    os.execv(command[0], command)
'''

MODES = ["sleepers", "daemon-hold", "daemon-close", "env-clear", "deaf", "holder"]


def is_gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def read_pids(path: Path) -> list[int]:
    return [int(part) for part in path.read_text(encoding="utf-8").split()]


@pytest.fixture
def escape(tmp_path: Path) -> Callable[[str, list[str]], tuple[list[str], Path]]:
    """argv running the misbehaviour `mode` and then `command`, and where its pids go."""
    script = tmp_path / "escape.py"
    script.write_text(ESCAPE, encoding="utf-8")

    def build(mode: str, command: list[str]) -> tuple[list[str], Path]:
        pidfile = tmp_path / f"{mode}.pids"
        argv = [sys.executable, str(script), mode, str(pidfile)]
        return ([*argv, "--", *command] if command else argv), pidfile

    return build


async def run_and_dispose(
    registry: SubagentRegistry, name: str, cwd: Path
) -> tuple[SubagentResult, str | None]:
    run = await registry.start(name, SubagentRequest(prompt="say hi", cwd=cwd))
    result = await run.result()
    return result, await run.dispose()


@pytest.mark.parametrize("mode", MODES)
async def test_acp_escapees_are_gone_after_dispose(
    escape: Callable[[str, list[str]], tuple[list[str], Path]], workspace: Path, mode: str
) -> None:
    script: dict[str, object] = {}
    if mode == "deaf":
        script = {"ignore_eof": True}
    elif mode == "holder":
        script = {"crash": {"at": "prompt", "exit_code": 3}}
    argv, pidfile = escape(mode, [sys.executable, "-m", "subagent_acp.testing"])
    config = ACPConfig(
        command=argv[0],
        args=argv[1:],
        env={"ACP_FAKE_SCRIPT": json.dumps(script)},
        **GRACES,
    )
    registry = SubagentRegistry()
    registry.register(ACPProvider(config))
    with anyio.fail_after(30):
        result, disposed = await run_and_dispose(registry, "acp", workspace)
    pids = read_pids(pidfile)
    assert pids
    if mode == "holder":
        # The leader exited while its grandchild held stdout: a process exit, not a hang.
        assert result.stop_reason == "error"
        assert result.diagnostic == (
            "Subagent failure (provider: acp; stage: process; category: process-exit; exit code: 3)"
        )
    else:
        assert result.stop_reason == "completed"
    assert disposed is None
    assert [pid for pid in pids if not is_gone(pid)] == []


@pytest.mark.parametrize("mode", MODES)
async def test_sdk_escapees_are_gone_after_dispose(
    escape: Callable[[str, list[str]], tuple[list[str], Path]], workspace: Path, mode: str
) -> None:
    script = FakeScript()
    if mode == "deaf":
        script = FakeScript(ignore_eof=True, ignore_shutdown=True)
    elif mode == "holder":
        script = FakeScript(exit_during_prompt=3)
    fake = [sys.executable, "-m", "subagent_sdk.testing", "--json", script.to_json()]
    argv, pidfile = escape(mode, fake)
    registry = SubagentRegistry()
    registry.register(SDKProvider(SDKConfig(command=argv[0], args=argv[1:], **GRACES)))
    with anyio.fail_after(30):
        result, disposed = await run_and_dispose(registry, "dsh-sdk", workspace)
    pids = read_pids(pidfile)
    assert pids
    if mode == "holder":
        # The runtime exited while its grandchild held stdout: the SDK reports a process exit
        # as `transport` with the figures, and does not hang.
        assert result.stop_reason == "error"
        assert result.diagnostic == (
            "Subagent failure (provider: dsh-sdk; stage: session-run; category: transport; "
            "exit code: 3)"
        )
    else:
        assert result.stop_reason == "completed"
    assert disposed is None
    assert [pid for pid in pids if not is_gone(pid)] == []


def tool_context(workspace: Path) -> RequestContext:
    stat = os.stat(workspace)
    return RequestContext(
        runtime="model",
        mode="execute",
        space="local",
        depth=0,
        workspace=workspace,
        workspace_identity=(stat.st_dev, stat.st_ino),
        shell="/bin/bash",
        tool_names=("process_execute",),
        cancel=CancelSignal(),
    )


@pytest.mark.parametrize("mode", MODES)
async def test_process_execute_escapees_are_gone_when_the_call_returns(
    escape: Callable[[str, list[str]], tuple[list[str], Path]], workspace: Path, mode: str
) -> None:
    argv, pidfile = escape(mode, [])
    command = " ".join(argv)
    if mode == "deaf":
        command = f"trap '' TERM; {command}; exec sleep 1000 < /dev/null"
    tool = ProcessExecuteTool(drain_grace_seconds=0.5, term_grace_seconds=0.5)
    timeout_ms = 3000 if mode == "deaf" else 30_000
    with anyio.fail_after(30):
        outcome = await tool.call(
            {"command": command, "timeout_ms": timeout_ms}, tool_context(workspace)
        )
    status = json.loads(outcome.content)["status"]
    assert status == ("timed_out" if mode == "deaf" else "completed")
    pids = read_pids(pidfile)
    assert pids
    assert [pid for pid in pids if not is_gone(pid)] == []


PARENT = r"""
import json, sys
import anyio
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import SubagentRegistry, SubagentRequest
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript
from subagent_core.testing import live_descendants, poll_until

acp_argv, sdk_argv, cwd = json.loads(sys.argv[1])

async def main():
    registry = SubagentRegistry()
    registry.register(ACPProvider(ACPConfig(
        command=acp_argv[0], args=acp_argv[1:],
        env={"ACP_FAKE_SCRIPT": json.dumps({"ignore_eof": True, "hang_at": "prompt"})})))
    registry.register(SDKProvider(SDKConfig(command=sdk_argv[0], args=sdk_argv[1:])))
    runs = [await registry.start(name, SubagentRequest(prompt="hang", cwd=cwd))
            for name in ("acp", "dsh-sdk")]
    sys.stdout.write("started\n")
    sys.stdout.flush()
    await anyio.sleep_forever()

anyio.run(main)
"""


async def test_sigkill_of_a_parent_with_an_acp_and_an_sdk_run_leaves_nothing_within_2s(
    escape: Callable[[str, list[str]], tuple[list[str], Path]], workspace: Path
) -> None:
    """EOF-deaf, TERM-trapping children with `setsid` grandchildren; the parent gets SIGKILL."""
    acp_argv, acp_pids = escape("deaf", [sys.executable, "-m", "subagent_acp.testing"])
    sdk_script = FakeScript(ignore_eof=True, ignore_shutdown=True, hang_at="prompt")
    sdk_fake = [sys.executable, "-m", "subagent_sdk.testing", "--json", sdk_script.to_json()]
    # A second pid file: both runs use the same misbehaviour script.
    sdk_argv, _ = escape("deaf", sdk_fake)
    sdk_pids = acp_pids.with_name("deaf-sdk.pids")
    sdk_argv[3] = str(sdk_pids)
    payload = json.dumps([acp_argv, sdk_argv, str(workspace)])
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
            below = [proc.pid for proc in psutil.Process(parent.pid).children(recursive=True)]
            pids = read_pids(acp_pids) + read_pids(sdk_pids)
            assert len(pids) == 2
            assert set(pids) <= set(below)
            assert [pid for pid in below if is_gone(pid)] == []
            parent.send_signal(signal.SIGKILL)
            await parent.wait()
            with anyio.fail_after(2):
                await poll_until(lambda: [pid for pid in below if not is_gone(pid)] == [])
        # A guard forked after `below` was taken exits too (its owner's socket is gone).
        with anyio.fail_after(5):
            await poll_until(lambda: live_descendants() == [])
