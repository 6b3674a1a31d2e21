"""Concurrent runs share nothing: each keeps its own output, facts and process tree."""

from __future__ import annotations

from pathlib import Path

import anyio
from subagent_acp import ACPProvider
from subagent_core import CancelSignal, SubagentRegistry, SubagentRequest, SubagentResult
from subagent_core.testing import live_group_members


async def test_twenty_concurrent_runs_with_mixed_outcomes(
    make_config, tmp_path: Path, wait_for_path, process_leak_guard: list[int]
) -> None:
    registry = SubagentRegistry()
    expected: dict[int, SubagentResult] = {}
    plans: dict[int, tuple[str, dict[str, object], CancelSignal, Path | None]] = {}
    for index in range(20):
        kind = ("complete", "crash", "hang", "permission")[index % 4]
        marker: Path | None = None
        if kind == "complete":
            script: dict[str, object] = {"text": f"run {index} done", "chunks": 3}
            expected[index] = SubagentResult(stop_reason="completed", output=f"run {index} done")
        elif kind == "crash":
            code = 10 + index
            script = {
                "text": f"partial {index}",
                "crash": {"at": "after_prompt_output", "exit_code": code},
            }
            expected[index] = SubagentResult(
                stop_reason="error",
                output=f"partial {index}",
                diagnostic=(
                    f"Subagent failure (provider: p{index}; stage: process; "
                    f"category: process-exit; exit code: {code})"
                ),
            )
        elif kind == "hang":
            marker = tmp_path / f"prompted-{index}"
            script = {
                "text": f"hanging {index}",
                "hang_at": "prompt",
                "markers": [{"at": "prompt_output", "path": str(marker)}],
            }
            expected[index] = SubagentResult(stop_reason="aborted", output=f"hanging {index}")
        else:
            script = {"permission": {"tool_kind": "execute"}, "stop_reason": "refusal"}
            policy = "allow" if index % 8 == 3 else "reject"
            decision = "allow_once" if policy == "allow" else "cancelled"
            output = (
                "[permission selected allow]" if policy == "allow" else "[permission cancelled]"
            )
            expected[index] = SubagentResult(
                stop_reason="refusal",
                output=output,
                diagnostic=f"ACP permission (policy: {policy}; tool kind: execute; decision: {decision})",
            )
        policy_of_run = "allow" if kind == "permission" and index % 8 == 3 else "reject"
        registry.register(
            ACPProvider(make_config(script, provider_name=f"p{index}", permission=policy_of_run))
        )
        plans[index] = (kind, script, CancelSignal(), marker)

    results: dict[int, SubagentResult] = {}

    async def one(index: int) -> None:
        kind, _, cancel, marker = plans[index]
        run = await registry.start(
            f"p{index}", SubagentRequest(prompt=f"task {index}", cancel=cancel)
        )
        async with run:
            if kind == "hang":
                assert marker is not None
                await wait_for_path(marker)
                cancel.cancel()
            results[index] = await run.result()

    with anyio.fail_after(110):
        async with anyio.create_task_group() as tg:
            for index in range(20):
                tg.start_soon(one, index)

    assert results == expected
    assert len(process_leak_guard) == 20
    for pgid in process_leak_guard:
        assert live_group_members(pgid) == []
