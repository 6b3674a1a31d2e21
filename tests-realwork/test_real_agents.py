"""The real agents doing real work through the presets, against the loopback model stub.

Each preset is driven through the library (`find_provider` → `build_provider` → a run: an
answer, with its time to result and to dispose; a cancel in the middle of the stream) and as a
user drives it (`harness delegate --json -a NAME`: a file written under `allow`, the same write
refused under `reject`, a 401 from the model service whose body holds a secret). Every figure
is printed at the end of the session.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from typing import Any

import anyio
import pytest
from harness._config.loading import parse_config
from harness._registry.build import build_provider, find_provider, with_graces
from subagent_core import CancelSignal, MessageChunk, SubagentRequest
from subagent_core.kit import open_managed_process

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

HARNESS = [sys.executable, "-m", "harness"]
ANSWER = "The stub says PONG-7731."
CONTENT = "ACP_CHILD_WAS_HERE\nsecond line\n"
REJECT_LINE = "ACP permission (policy: reject; tool kind: edit; decision: cancelled)"
REJECT_LINES = {
    "claude": "Claude permission (policy: reject; tool kind: edit; decision: reject_once)",
    "codex": "Codex permission (policy: reject; tool kind: execute; decision: reject_once)",
}
"""The native providers' own permission lines (every ACP agent's is `REJECT_LINE`)."""
WRITE_COMMAND = "printf 'ACP_CHILD_WAS_HERE\\nsecond line\\n' > proof.txt"
"""codex writes with a shell command that asks to leave its read-only sandbox."""
RUN_SECONDS = 180
SECRET = "sk-realwork-SECRET-4f1c9e"
AUTHENTICATION = {"claude-acp", "gemini", "claude", "codex"}
"""Agents whose 401 reaches us as a closed fact (ACP -32000, JSON-RPC code 401, the native
CLIs' own error facts); the others answer -32603 only (`category: transport`), as the harness
AGENTS.md's preset table says."""


async def _delegate(agent: Any, *args: str) -> tuple[list[dict[str, Any]], str, float]:
    """`harness delegate --json -a PRESET … PROMPT` with the agent's whole env; (records, stderr, s)."""
    argv = [*HARNESS, "delegate", "--json", "-a", agent.preset, "-w", str(agent.workspace)]
    argv += [*args, "Do the task."]
    started = time.monotonic()
    with anyio.fail_after(RUN_SECONDS):
        async with open_managed_process(
            argv, env=agent.env, cwd=agent.workspace, stdin="devnull", stderr="pipe"
        ) as process:
            assert process.stdout is not None
            assert process.stderr is not None
            out, err = bytearray(), bytearray()

            async def drain(stream: Any, into: bytearray) -> None:
                async for chunk in stream:
                    into.extend(chunk)

            async with anyio.create_task_group() as tg:
                tg.start_soon(drain, process.stdout, out)
                tg.start_soon(drain, process.stderr, err)
            await process.wait()
    seconds = time.monotonic() - started
    records = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    assert records, err.decode(errors="replace")[-2000:]
    assert records[-1]["type"] == "result"
    return records, err.decode(errors="replace"), seconds


def _library_provider(agent: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The preset's provider as a library user builds it, in the agent's environment."""
    for name, value in agent.env.items():
        monkeypatch.setenv(name, value)
    settings = find_provider(parse_config({}), None, agent.preset)
    assert settings is not None
    return build_provider(
        with_graces(settings, 0.5, 0.5, 1.0), endpoint=None, workspace=agent.workspace
    )


async def test_an_answer_completes_with_the_stubs_text(
    agent: Any, stub: Any, figure: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub.script(text=ANSWER)
    provider = _library_provider(agent, monkeypatch)
    request = SubagentRequest(prompt="Do the task.", cwd=agent.workspace)
    started = time.monotonic()
    with anyio.fail_after(RUN_SECONDS):
        run = await provider.start(request)
        async with run:
            result = await run.result()
            settled = time.monotonic()
            teardown = await run.dispose()
        disposed = time.monotonic()
    assert (result.stop_reason, teardown) == ("completed", None)
    assert ANSWER in result.output
    assert result.diagnostic is None
    figure(
        agent.preset,
        "answer (library)",
        f"result {settled - started:.1f} s, dispose {disposed - settled:.2f} s",
    )


def _write_scenario(agent: Any, text: str) -> dict[str, Any]:
    """The stub's script for a write: the agent's own file-write tool, or codex's command."""
    target = agent.workspace / "proof.txt"
    if agent.preset == "codex":
        return {"text": text, "command": WRITE_COMMAND, "escalate": True}
    return {"text": text, "write": {"path": str(target), "content": CONTENT}}


def _write_args(agent: Any, permission: str) -> tuple[str, ...]:
    """ACP agents write through the client fs; the native ones (no `--fs`) write themselves.
    codex under plain `reject` is never asked (its sandbox alone refuses): `--approve reads`
    has it ask and be refused, which leaves the permission line."""
    if agent.preset == "codex" and permission == "reject":
        return ("--approve", "reads")
    if agent.preset in REJECT_LINES:
        return ("--permission", permission)
    return ("--permission", permission, "--fs", "read-write")


async def test_a_write_under_allow_leaves_the_exact_file(
    agent: Any, stub: Any, figure: Any
) -> None:
    target = agent.workspace / "proof.txt"
    stub.script(**_write_scenario(agent, "Wrote it."))
    records, err, seconds = await _delegate(agent, *_write_args(agent, "allow"))
    result = records[-1]
    assert result["stop_reason"] == "completed", (result, err[-1500:])
    assert target.read_bytes() == CONTENT.encode()
    permissions = [r for r in records if r["type"] == "permission"]
    assert permissions
    assert {(p["policy"], p["decision"]) for p in permissions} == {("allow", "allow_once")}
    tools = [r for r in records if r["type"] == "tool_call"]
    kind = "execute" if agent.preset == "codex" else "edit"
    assert any(r["kind"] == kind for r in tools), tools
    figure(
        agent.preset,
        "write under allow",
        f"file written, {len(permissions)} permission and {len(tools)} tool events, {seconds:.1f} s",
    )


async def test_a_write_under_reject_leaves_no_file(agent: Any, stub: Any, figure: Any) -> None:
    target = agent.workspace / "proof.txt"
    stub.script(**_write_scenario(agent, "Could not write it."))
    records, err, seconds = await _delegate(agent, *_write_args(agent, "reject"))
    result = records[-1]
    assert not target.exists()
    assert result["stop_reason"] in ("completed", "aborted"), (result, err[-1500:])
    assert REJECT_LINES.get(agent.preset, REJECT_LINE) in (result["diagnostic"] or ""), result
    figure(
        agent.preset,
        "write under reject",
        f"no file, {result['stop_reason']} + permission line, {seconds:.1f} s",
    )


async def test_a_cancel_mid_stream_ends_aborted_with_nothing_left(
    agent: Any, stub: Any, figure: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process leak guard checks, after the test, that no process of the run is left."""
    stub.script(text="word " * 60, chunks=60, delay=0.25)
    provider = _library_provider(agent, monkeypatch)
    cancel = CancelSignal()
    request = SubagentRequest(prompt="Do the task.", cwd=agent.workspace, cancel=cancel)
    with anyio.fail_after(RUN_SECONDS):
        run = await provider.start(request)
        async with run:
            async for event in run.events():
                if isinstance(event, MessageChunk):
                    break
            cancelled = time.monotonic()
            cancel.cancel()
            result = await run.result()
            settled = time.monotonic()
            teardown = await run.dispose()
    assert (result.stop_reason, result.diagnostic, teardown) == ("aborted", None, None)
    assert len(result.output) < len("word " * 60)
    figure(
        agent.preset, "cancel mid-stream", f"aborted {settled - cancelled:.2f} s after the cancel"
    )


async def test_a_401_holding_a_secret_is_an_error_that_shows_no_secret(
    agent: Any, stub: Any, figure: Any
) -> None:
    stub.script(status=401, secret=SECRET)
    records, _, seconds = await _delegate(agent)
    result = records[-1]
    assert result["stop_reason"] == "error", result
    for field in ("diagnostic", "teardown", "start_failure"):
        assert SECRET not in (result[field] or "")
    for record in records:
        if record["type"] not in ("message", "thought"):  # child text may repeat the body
            assert SECRET not in json.dumps({k: v for k, v in record.items() if k != "output"})
    diagnostic = result["diagnostic"] or ""
    category = diagnostic.split("category: ")[-1].split(")")[0].split(";")[0]
    if agent.preset in AUTHENTICATION:
        assert category == "authentication", diagnostic
    figure(
        agent.preset,
        "401 with a secret",
        f"error, category: {category}, {seconds:.1f} s, no secret in safe fields",
    )


async def test_codex_runs_a_command_inside_its_bubblewrap_sandbox(
    codex_agent: Any, stub: Any, figure: Any
) -> None:
    """codex-acp's commands run in bubblewrap (`.ci/run` installs it): the command's output
    reaches the model. Without bubblewrap, or with its home under the temporary directory
    (where codex will not set up its `codex-linux-sandbox` helper), the command fails."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    stub.script(text="Ran it.", command="printf sandboxed-%s ok", expect="sandboxed-ok")
    records, err, seconds = await _delegate(codex_agent, "--permission", "reject")
    result = records[-1]
    assert result["stop_reason"] == "completed", (result, err[-1500:])
    assert any(entry["tool_result"] and entry["expected"] for entry in stub.log()), stub.log()
    figure("codex-acp", "command in its sandbox", f"ran, output seen by the model, {seconds:.1f} s")
