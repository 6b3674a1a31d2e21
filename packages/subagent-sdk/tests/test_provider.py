"""SDKProvider over the real fake runtime: mapping, start rules, cancel, dispose, isolation."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from subagent_core import (
    CancelSignal,
    SubagentRegistry,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
)
from subagent_core.testing import poll_until
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.client import InitializeResult, RunTranscript
from subagent_sdk.testing import FakeScript

CHILDREN = Path(__file__).parent / "children"

Provider = Callable[..., SDKProvider]
ABORTED_TEXT = "subagent request was aborted before the SDK child started"
GRAMMAR = re.compile(
    r"Subagent failure \(provider: dsh-sdk; stage: (initialize|session-run|shutdown); "
    r"category: (configuration|protocol|transport|unknown|child-error|child-disposed|"
    r"child-unknown|missing-terminal)(; stop reason: (aborted|error))?(; exit code: -?\d+)?"
    r"(; signal: SIG[A-Z0-9]+)?\)"
)


def line(stage: str, category: str, tail: str = "") -> str:
    return f"Subagent failure (provider: dsh-sdk; stage: {stage}; category: {category}{tail})"


async def run_once(provider: SDKProvider, tmp_path: Path, prompt: str = "do it") -> SubagentResult:
    with anyio.fail_after(30):
        run = await provider.start(SubagentRequest(prompt=prompt, cwd=tmp_path))
        async with run:
            result = await run.result()
        assert await run.dispose() is None
    return result


async def start_error(provider: SDKProvider, request: SubagentRequest) -> SubagentStartError:
    with anyio.fail_after(30), pytest.raises(SubagentStartError) as caught:
        await provider.start(request)
    error = caught.value
    assert str(error) == (error.diagnostic if error.diagnostic is not None else ABORTED_TEXT)
    return error


async def wait_for_file(path: Path) -> None:
    # The fake writes a marker file when it reaches its hang point (bounded by the caller).
    await poll_until(path.exists)


@pytest.mark.parametrize(
    ("turn_end", "stop_reason", "diagnostic"),
    [
        ({"kind": "completed"}, "completed", None),
        ({"kind": "max-tokens"}, "max-tokens", None),
        ({"kind": "aborted", "reason": {"kind": "user"}}, "aborted", None),
        ({"kind": "aborted", "reason": {"kind": "parent"}}, "aborted", None),
        (
            {"kind": "aborted", "reason": {"kind": "disposed"}},
            "aborted",
            line("session-run", "child-disposed", "; stop reason: aborted"),
        ),
        ({"kind": "blocked"}, "refusal", None),
        (
            {"kind": "error", "error": {"message": "SECRET upstream text", "code": "x"}},
            "error",
            line("session-run", "child-error", "; stop reason: error"),
        ),
        ({"kind": "interrupted"}, "error", None),
        ({"kind": "exploded-SECRET"}, "error", line("session-run", "child-unknown")),
        ("completed", "error", line("session-run", "child-unknown")),
        ({"kind": 7}, "error", line("session-run", "child-unknown")),
        (None, "error", line("session-run", "child-unknown")),
    ],
)
async def test_turn_end_mapping(
    provider: Provider, tmp_path: Path, turn_end: object, stop_reason: str, diagnostic: str | None
) -> None:
    result = await run_once(provider(FakeScript(text="the answer", turn_end=turn_end)), tmp_path)  # type: ignore[arg-type]
    assert result == SubagentResult(
        stop_reason=stop_reason, output="the answer", diagnostic=diagnostic
    )  # type: ignore[arg-type]


async def test_no_turn_end_before_idle_is_missing_terminal(
    provider: Provider, tmp_path: Path
) -> None:
    result = await run_once(provider(FakeScript(text="half", omit_turn_end=True)), tmp_path)
    assert result == SubagentResult(
        stop_reason="error", output="half", diagnostic=line("session-run", "missing-terminal")
    )


async def test_empty_final_message_falls_back_to_the_deltas(
    provider: Provider, tmp_path: Path
) -> None:
    result = await run_once(
        provider(FakeScript(text="from deltas", deltas=4, empty_final_message=True)), tmp_path
    )
    assert result == SubagentResult(stop_reason="completed", output="from deltas")
    result = await run_once(
        provider(FakeScript(text="none", deltas=0, final_message=False)), tmp_path
    )
    assert result == SubagentResult(stop_reason="completed", output="")


async def test_handshake_params_are_recorded_exactly_once(
    provider: Provider, tmp_path: Path
) -> None:
    record = tmp_path / "init.jsonl"
    await run_once(provider(FakeScript(record_initialize=str(record))), tmp_path)
    assert [json.loads(x) for x in record.read_text(encoding="utf-8").splitlines()] == [
        {"cwd": str(tmp_path), "provider": "deepseek-official", "model": "deepseek-chat"}
    ]
    record.unlink()
    custom = provider(
        FakeScript(record_initialize=str(record)), provider="other-llm", model="m-2", max_tokens=77
    )
    await run_once(custom, tmp_path)
    assert [json.loads(x) for x in record.read_text(encoding="utf-8").splitlines()] == [
        {"cwd": str(tmp_path), "provider": "other-llm", "model": "m-2", "maxTokens": 77}
    ]


async def test_child_env_is_scrubbed_and_explicit_entries_win(
    provider: Provider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARENT_SECRET_TOKEN", "leak")
    monkeypatch.setenv("DSH_AMBIENT", "leak")
    monkeypatch.setenv("HARMLESS_VALUE", "kept")
    names = ["PARENT_SECRET_TOKEN", "DSH_AMBIENT", "HARMLESS_VALUE", "DEEPSEEK_API_KEY", "DSH_MODE"]
    sdk = provider(
        FakeScript(echo_env=names), env={"DEEPSEEK_API_KEY": "explicit-key", "DSH_MODE": "x"}
    )
    result = await run_once(sdk, tmp_path)
    assert result.output.splitlines() == [
        "PARENT_SECRET_TOKEN=<unset>",
        "DSH_AMBIENT=<unset>",
        "HARMLESS_VALUE=kept",
        "DEEPSEEK_API_KEY=explicit-key",
        "DSH_MODE=x",
    ]


async def test_cwd_rules(provider: Provider, tmp_path: Path) -> None:
    # The config's cwd wins over the request's; the runtime runs there.
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = await run_once(provider(FakeScript(echo_cwd=True), cwd=workspace), tmp_path)
    assert result.output == str(workspace)
    # Without config cwd, the request's absolute cwd is used.
    result = await run_once(provider(FakeScript(echo_cwd=True), cwd=None), workspace)
    assert result.output == str(workspace)
    configuration = line("initialize", "configuration")
    no_cwd = provider(cwd=None)
    for cwd in (None, Path("relative/dir"), tmp_path / "missing", tmp_path / "file"):
        (tmp_path / "file").write_text("x", encoding="utf-8")
        error = await start_error(no_cwd, SubagentRequest(prompt="p", cwd=cwd))
        assert error.diagnostic == configuration
    error = await start_error(
        provider(cwd=tmp_path / "missing"), SubagentRequest(prompt="p", cwd=tmp_path)
    )
    assert error.diagnostic == configuration


async def test_hang_then_cancel_settles_aborted_with_empty_output(
    provider: Provider, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    sdk = provider(FakeScript(hang_at="prompt", ready_file=str(ready)))
    cancel = CancelSignal()
    with anyio.fail_after(30):
        run = await sdk.start(SubagentRequest(prompt="p", cwd=tmp_path, cancel=cancel))
        async with run:
            await wait_for_file(ready)
            cancel.cancel()
            assert await run.result() == SubagentResult(stop_reason="aborted", output="")
        assert await run.dispose() is None


async def test_cancel_after_streaming_settles_aborted_with_the_partial_output(
    provider: Provider, tmp_path: Path
) -> None:
    # hang_at="deltas": the deltas are streamed (and read by the client) before the hang.
    ready = tmp_path / "ready"
    sdk = provider(FakeScript(text="partial", deltas=2, hang_at="deltas", ready_file=str(ready)))
    cancel = CancelSignal()
    with anyio.fail_after(30):
        run = await sdk.start(SubagentRequest(prompt="p", cwd=tmp_path, cancel=cancel))
        await wait_for_file(ready)
        cancel.cancel()
        # Settles without waiting for the child (it hangs until dispose) and without a diagnostic.
        assert await run.result() == SubagentResult(stop_reason="aborted", output="partial")
        assert await run.dispose() is None
        assert await run.result() == SubagentResult(stop_reason="aborted", output="partial")


async def test_dispose_without_cancel_settles_aborted(provider: Provider, tmp_path: Path) -> None:
    for hang_at, output in (("prompt", ""), ("deltas", "partial")):
        ready = tmp_path / f"ready-{hang_at}"
        sdk = provider(FakeScript(text="partial", hang_at=hang_at, ready_file=str(ready)))
        with anyio.fail_after(30):
            run = await sdk.start(SubagentRequest(prompt="p", cwd=tmp_path))
            await wait_for_file(ready)
            assert await run.dispose() is None
            assert await run.dispose() is None
            assert await run.result() == SubagentResult(stop_reason="aborted", output=output)


async def test_a_cancelled_dispose_caller_does_not_skip_the_cleanup(
    provider: Provider, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    sdk = provider(FakeScript(hang_at="prompt", ready_file=str(ready)))
    with anyio.fail_after(30):
        run = await sdk.start(SubagentRequest(prompt="p", cwd=tmp_path))
        await wait_for_file(ready)
        outcomes: list[str | None] = []
        with anyio.CancelScope() as scope:
            scope.cancel()
            outcomes.append(await run.dispose())
        # The shielded cleanup ran to the end (no second dispose: the leak guard checks the tree).
        assert outcomes == [None]
        assert await run.result() == SubagentResult(stop_reason="aborted", output="")


async def test_a_failed_shutdown_request_then_a_confirmed_ladder_is_only_logged(
    provider: Provider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="subagent_sdk")
    sdk = provider(FakeScript(text="ok", ignore_shutdown=True), shutdown_timeout_seconds=0.2)
    assert await run_once(sdk, tmp_path) == SubagentResult(stop_reason="completed", output="ok")
    assert "SDK shutdown request failed (runtime gone: True)" in caplog.text


async def test_pre_cancelled_request_spawns_nothing(tmp_path: Path) -> None:
    sentinel = tmp_path / "spawned"
    sdk = SDKProvider(SDKConfig(command="/bin/sh", args=["-c", f"touch {sentinel}"], cwd=tmp_path))
    cancel = CancelSignal()
    cancel.cancel()
    error = await start_error(sdk, SubagentRequest(prompt="p", cwd=tmp_path, cancel=cancel))
    assert (str(error), error.diagnostic) == (ABORTED_TEXT, None)
    assert not sentinel.exists()


async def test_exit_before_initialize_is_a_transport_start_error_with_the_exit_code(
    provider: Provider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="subagent_sdk")
    secret = "RUNTIME-STDERR-SECRET sk-live-123"
    sdk = provider(FakeScript(stderr=secret, exit_before_initialize=3))
    error = await start_error(sdk, SubagentRequest(prompt="p", cwd=tmp_path))
    assert error.diagnostic == line("initialize", "transport", "; exit code: 3")
    assert secret not in str(error)
    assert secret in caplog.text
    assert secret in str(error.__cause__)


async def test_initialize_failures_are_protocol(
    provider: Provider, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="subagent_sdk")
    request = SubagentRequest(prompt="p", cwd=tmp_path)
    rpc_error = provider(
        FakeScript(
            initialize_error={
                "code": -32603,
                "message": "SECRET auth text",
                "data": {"k": "SECRET"},
            }
        )
    )
    error = await start_error(rpc_error, request)
    assert error.diagnostic == line("initialize", "protocol")
    assert "SECRET" not in str(error)
    # The runtime's own text stays in the host log.
    assert "SECRET auth text" in caplog.text
    for bad in ({}, {"serverInfo": {"name": "n", "version": 1}}, "nope"):
        error = await start_error(provider(FakeScript(initialize_result=bad)), request)
        assert error.diagnostic == line("initialize", "protocol")


async def test_over_limit_frame_at_initialize_is_transport(
    provider: Provider, tmp_path: Path
) -> None:
    sdk = provider(FakeScript(noise=["huge-line"], huge_line_bytes=10_000), max_frame_bytes=4096)
    error = await start_error(sdk, SubagentRequest(prompt="p", cwd=tmp_path))
    assert error.diagnostic == line("initialize", "transport")


async def test_prompt_rejection_and_malformed_receipt_are_session_run_protocol(
    provider: Provider, tmp_path: Path
) -> None:
    rejected = await run_once(provider(FakeScript(prompt_error={"message": "SECRET"})), tmp_path)
    assert rejected == SubagentResult(
        stop_reason="error", output="", diagnostic=line("session-run", "protocol")
    )
    malformed = await run_once(provider(FakeScript(prompt_result={"messageId": None})), tmp_path)
    assert malformed == rejected


async def test_malformed_message_is_protocol_and_keeps_streamed_text(
    provider: Provider, tmp_path: Path
) -> None:
    result = await run_once(
        provider(FakeScript(text="streamed", deltas=2, malformed_message=True)), tmp_path
    )
    assert result == SubagentResult(
        stop_reason="error", output="streamed", diagnostic=line("session-run", "protocol")
    )
    result = await run_once(provider(FakeScript(malformed_event=True)), tmp_path)
    assert result == SubagentResult(
        stop_reason="error", output="", diagnostic=line("session-run", "protocol")
    )


async def test_runtime_exit_mid_run_is_transport_with_figures(
    provider: Provider, tmp_path: Path
) -> None:
    result = await run_once(provider(FakeScript(text="so far", exit_during_prompt=4)), tmp_path)
    assert result == SubagentResult(
        stop_reason="error",
        output="so far",
        diagnostic=line("session-run", "transport", "; exit code: 4"),
    )


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_runtime_killed_mid_run_is_transport_with_the_signal(
    provider: Provider, tmp_path: Path
) -> None:
    script = FakeScript(text="so far", signal_during_prompt="SIGKILL")
    assert await run_once(provider(script), tmp_path) == SubagentResult(
        stop_reason="error",
        output="so far",
        diagnostic=line("session-run", "transport", "; signal: SIGKILL"),
    )


async def test_over_limit_frame_mid_run_is_transport_without_figures(
    provider: Provider, tmp_path: Path
) -> None:
    # The runtime keeps running, so no exit facts are observed within the 1 s wait.
    script = FakeScript(noise=["huge-line"], noise_at="prompt", huge_line_bytes=10_000)
    assert await run_once(provider(script, max_frame_bytes=4096), tmp_path) == SubagentResult(
        stop_reason="error", output="", diagnostic=line("session-run", "transport")
    )


@pytest.mark.parametrize(
    "script",
    [
        FakeScript(text="fine", stderr="STDERR-SECRET"),
        FakeScript(text="so far", exit_during_prompt=5, stderr="STDERR-SECRET"),
        FakeScript(text="half", malformed_message=True, stderr="STDERR-SECRET"),
    ],
)
async def test_stderr_reaches_the_host_log_only(
    provider: Provider, tmp_path: Path, caplog: pytest.LogCaptureFixture, script: FakeScript
) -> None:
    caplog.set_level(logging.DEBUG, logger="subagent_sdk")
    result = await run_once(provider(script), tmp_path)
    assert "STDERR-SECRET" not in repr(result)
    assert "sdk runtime stderr: STDERR-SECRET" in caplog.text


async def test_stream_before_receipt_and_child_sessions_are_not_attributed(
    provider: Provider, tmp_path: Path
) -> None:
    script = FakeScript(
        text="mine",
        stream_before_receipt="NOT MINE",
        subagent={"text": "CHILD", "turn_end": {"kind": "error"}},
    )
    assert await run_once(provider(script), tmp_path) == SubagentResult(
        stop_reason="completed", output="mine"
    )


@pytest.mark.parametrize("phase", ["initialize", "prompt"])
async def test_an_adversarial_runtime_stays_in_the_closed_grammar(
    provider: Provider, tmp_path: Path, phase: str
) -> None:
    noise = ["garbage", "non-utf8", "unknown-ids", "huge-line", "requests", "split"]
    if phase == "prompt":
        noise.append("foreign-sessions")
    script = FakeScript(text="ok 权限", noise=noise, noise_at=phase, turn_end={"kind": "completed"})
    assert await run_once(provider(script), tmp_path) == SubagentResult(
        stop_reason="completed", output="ok 权限"
    )


@pytest.mark.parametrize(
    "script",
    [
        FakeScript(turn_end={"kind": "error", "error": {"message": "SECRET-1"}}, stderr="SECRET-2"),
        FakeScript(turn_end="SECRET-3"),
        FakeScript(prompt_error={"code": -1, "message": "SECRET-4", "data": "SECRET-5"}),
        FakeScript(exit_during_prompt=9, stderr="SECRET-6"),
        FakeScript(initialize_error={"message": "SECRET-7"}),
        FakeScript(exit_before_initialize=2, stderr="SECRET-8"),
    ],
)
async def test_child_text_never_reaches_a_diagnostic(
    provider: Provider, tmp_path: Path, script: FakeScript
) -> None:
    sdk = provider(script, env={"SOME_API_KEY": "SECRET-9"})
    if script.exit_before_initialize is not None or script.initialize_error is not None:
        diagnostic = (await start_error(sdk, SubagentRequest(prompt="p", cwd=tmp_path))).diagnostic
    else:
        diagnostic = (await run_once(sdk, tmp_path)).diagnostic
    assert diagnostic is not None
    assert GRAMMAR.fullmatch(diagnostic)
    assert "SECRET" not in diagnostic


async def test_hang_at_initialize_until_the_go_file(provider: Provider, tmp_path: Path) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    sdk = provider(
        FakeScript(text="went", hang_at="initialize", ready_file=str(ready), go_file=str(go))
    )
    results: list[SubagentResult] = []

    async def start() -> None:
        results.append(await run_once(sdk, tmp_path))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(start)
            await wait_for_file(ready)
            go.write_text("go", encoding="utf-8")
    assert results == [SubagentResult(stop_reason="completed", output="went")]


async def test_concurrent_runs_are_isolated(provider: Provider, tmp_path: Path) -> None:
    cases = [
        (FakeScript(text=f"answer {i}", turn_end=end), stop, diag)
        for i, (end, stop, diag) in enumerate(
            [
                ({"kind": "completed"}, "completed", None),
                (
                    {"kind": "error"},
                    "error",
                    line("session-run", "child-error", "; stop reason: error"),
                ),
                ({"kind": "blocked"}, "refusal", None),
                ({"kind": "max-tokens"}, "max-tokens", None),
            ]
            * 2
        )
    ]
    results: dict[int, SubagentResult] = {}
    ids: set[str] = set()

    async def one(index: int, script: FakeScript) -> None:
        run = await provider(script).start(SubagentRequest(prompt=f"p{index}", cwd=tmp_path))
        ids.add(run.id)
        async with run:
            results[index] = await run.result()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for index, (script, _, _) in enumerate(cases):
                tg.start_soon(one, index, script)
    for index, (_, stop, diag) in enumerate(cases):
        assert results[index] == SubagentResult(
            stop_reason=stop, output=f"answer {index}", diagnostic=diag
        )  # type: ignore[arg-type]
    assert len(ids) == len(cases)


async def test_through_the_registry_with_a_custom_name(tmp_path: Path, provider: Provider) -> None:
    registry = SubagentRegistry()
    registry.register(provider(FakeScript(turn_end={"kind": "error"}), provider_name="sdk-two"))
    with anyio.fail_after(30):
        run = await registry.start("sdk-two", SubagentRequest(prompt="p", cwd=tmp_path))
        async with run:
            result = await run.result()
    assert (
        result.diagnostic
        == "Subagent failure (provider: sdk-two; stage: session-run; category: child-error; stop reason: error)"
    )
    assert run.id not in result.output


async def test_provider_surface(provider: Provider) -> None:
    sdk = provider()
    assert sdk.name == "dsh-sdk"
    assert not sdk.inherits_parent_context
    caps = sdk.capabilities
    assert (caps.output_schema, caps.depth_limit, caps.tool_filter, caps.persona) == (
        False,
        False,
        False,
        False,
    )


async def test_each_run_sends_one_fresh_session_and_one_prompt(tmp_path: Path) -> None:
    # The recording peer answers the prompt but never streams, so each run waits until disposed.
    sessions: list[str] = []
    for index in range(2):
        log = tmp_path / f"peer-{index}.log"
        sdk = SDKProvider(
            SDKConfig(
                command=sys.executable,
                args=[str(CHILDREN / "peer.py"), str(log)],
                cwd=tmp_path,
                dispose_eof_grace_seconds=0.5,
                dispose_grace_seconds=0.5,
                dispose_kill_grace_seconds=1.0,
            )
        )
        with anyio.fail_after(30):
            run = await sdk.start(SubagentRequest(prompt=f"task {index}", cwd=tmp_path))
            # The peer appends each line it reads to the log: poll it as a marker (bounded).
            while b"session/prompt" not in await anyio.Path(log).read_bytes():  # noqa: ASYNC110
                await anyio.sleep(0.01)
            assert await run.dispose() is None
            assert await run.result() == SubagentResult(stop_reason="aborted", output="")
        frames = [json.loads(x) for x in log.read_bytes().splitlines()]
        assert [frame["method"] for frame in frames] == ["initialize", "session/prompt", "shutdown"]
        params = frames[1]["params"]
        assert re.fullmatch(r"session-[0-9a-f]{32}", params["sessionId"])
        assert params["contentBlocks"] == [{"type": "text", "text": f"task {index}"}]
        sessions.append(params["sessionId"])
    assert sessions[0] != sessions[1]


async def test_any_other_error_is_unknown_and_its_message_is_not_read(
    provider: Provider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real runtimes cannot raise a foreign exception through the client, so one is injected
    # at the parsing boundary; the text it carries names other categories on purpose.
    def explode(*_: object) -> None:
        raise RuntimeError("SECRET protocol transport child-error")

    with monkeypatch.context() as patch:
        patch.setattr(InitializeResult, "parse", explode)
        error = await start_error(provider(), SubagentRequest(prompt="p", cwd=tmp_path))
    assert error.diagnostic == line("initialize", "unknown")
    with monkeypatch.context() as patch:
        patch.setattr(RunTranscript, "feed", explode)
        result = await run_once(provider(), tmp_path)
    assert result == SubagentResult(
        stop_reason="error", output="", diagnostic=line("session-run", "unknown")
    )


async def test_a_runtime_deaf_to_shutdown_eof_and_sigterm_is_gone_soon_after_its_answer(
    provider: Provider, tmp_path: Path
) -> None:
    """Default graces: EOF follows `shutdown` at once, so its grace runs during the 0.5 s
    `shutdown` bound; then SIGTERM (ignored) and SIGKILL. Bounded generously for a loaded
    machine; the figure itself belongs in a benchmark."""
    script = FakeScript(ignore_eof=True, trap_sigterm=True, ignore_shutdown=True)
    sdk = provider(
        script,
        dispose_eof_grace_seconds=0.5,
        dispose_grace_seconds=0.5,
        dispose_kill_grace_seconds=3.0,
    )
    with anyio.fail_after(30):
        run = await sdk.start(SubagentRequest(prompt="hi", cwd=tmp_path))
        result = await run.result()
        with anyio.fail_after(5):
            assert await run.dispose() is None
    assert result.stop_reason == "completed"
