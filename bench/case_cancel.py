"""Cancel -> process tree gone, for ACP, SDK and `process_execute`.

The clock starts at `CancelSignal.cancel()` and stops when dispose (or the tool call) has
returned; then the bench checks that no descendant of this process is still running.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from _context import PYTHON, BenchError, Context, live_descendants, wait_for_file
from _report import Section, Target
from _timing import Sample, Subject, paired
from model_agent.tools import ProcessExecuteTool, RequestContext
from subagent_acp import ACPConfig, ACPProvider
from subagent_core import CancelSignal, SubagentProvider, SubagentRequest
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript

EOF_GRACE = 0.5
TERM_GRACE = 0.5
KILL_GRACE = 1.0
GRACES = f"graces: EOF {EOF_GRACE} s, TERM {TERM_GRACE} s, KILL {KILL_GRACE} s"

Behaviour = str  # "cooperative" | "ignores SIGTERM"
COOPERATIVE = "cooperative"
STUBBORN = "ignores SIGTERM"


def _check_gone(what: str) -> None:
    alive = live_descendants()
    if alive:
        raise BenchError(f"{what}: {len(alive)} process(es) still alive after dispose")


def _marker(ctx: Context, name: str) -> Path:
    path = ctx.work / name
    path.unlink(missing_ok=True)
    return path


def run_subject(
    ctx: Context, name: str, provider_for: Callable[[Path], SubagentProvider]
) -> Subject:
    """Times cancel → `aborted` result → disposed, tree gone (`profile_case.py` profiles it)."""

    async def subject() -> float:
        marker = _marker(ctx, f"{name}.ready")
        provider = provider_for(marker)
        cancel = CancelSignal()
        run = await provider.start(SubagentRequest(prompt="bench", cwd=ctx.work, cancel=cancel))
        try:
            await wait_for_file(marker)
            started = time.perf_counter()
            cancel.cancel()
            result = await run.result()
            await run.dispose()
            elapsed = time.perf_counter() - started
        finally:
            await run.dispose()
        if result.stop_reason != "aborted":
            raise BenchError(f"{name}: cancelled run ended {result.stop_reason}")
        _check_gone(name)
        return elapsed

    return subject


def acp_provider(behaviour: Behaviour) -> Callable[[Path], SubagentProvider]:
    def build(marker: Path) -> SubagentProvider:
        script: dict[str, object] = {
            "hang_at": "prompt",
            "markers": [{"path": str(marker), "at": "prompt"}],
        }
        if behaviour == STUBBORN:
            script |= {"ignore_cancel": True, "ignore_eof": True, "trap_sigterm": True}
        return ACPProvider(
            ACPConfig(
                command=PYTHON,
                args=["-m", "subagent_acp.testing", "--script-json", json.dumps(script)],
                dispose_eof_grace_seconds=EOF_GRACE,
                dispose_grace_seconds=TERM_GRACE,
                dispose_kill_grace_seconds=KILL_GRACE,
            )
        )

    return build


def sdk_provider(behaviour: Behaviour) -> Callable[[Path], SubagentProvider]:
    def build(marker: Path) -> SubagentProvider:
        stubborn = behaviour == STUBBORN
        script = FakeScript(
            hang_at="prompt",
            ready_file=str(marker),
            trap_sigterm=stubborn,
            ignore_eof=stubborn,
            ignore_shutdown=stubborn,
        )
        return SDKProvider(
            SDKConfig(
                command=PYTHON,
                args=["-m", "subagent_sdk.testing", "--json", script.to_json()],
                dispose_eof_grace_seconds=EOF_GRACE,
                dispose_grace_seconds=TERM_GRACE,
                dispose_kill_grace_seconds=KILL_GRACE,
            )
        )

    return build


def process_subject(ctx: Context, behaviour: Behaviour) -> Subject:
    tool = ProcessExecuteTool(term_grace_seconds=TERM_GRACE, kill_grace_seconds=KILL_GRACE)
    trap = "trap '' TERM; " if behaviour == STUBBORN else ""

    async def subject() -> float:
        marker = _marker(ctx, "process.ready")
        stat = os.stat(ctx.work)
        cancel = CancelSignal()
        context = RequestContext(
            runtime="model",
            mode="execute",
            space="local",
            depth=0,
            workspace=ctx.work,
            workspace_identity=(stat.st_dev, stat.st_ino),
            shell="/bin/bash",
            tool_names=("process_execute",),
            cancel=cancel,
        )
        command = f"{trap}touch {marker.name}; sleep 30"
        ended: list[float] = []
        content: list[str] = []

        async def call() -> None:
            outcome = await tool.call({"command": command, "timeout_ms": 60_000}, context)
            ended.append(time.perf_counter())
            content.append(outcome.content)

        started = 0.0
        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await wait_for_file(marker)
            started = time.perf_counter()
            cancel.cancel()
        if '"status": "cancelled"' not in content[0]:
            raise BenchError("process_execute: the cancelled call did not end cancelled")
        _check_gone("process_execute")
        return ended[0] - started

    return subject


async def cancel_to_gone(ctx: Context) -> list[Section]:
    section = Section(
        "Cancel -> process tree gone",
        notes=[
            f"{GRACES} (process_execute has no EOF step: its stdin is /dev/null). The SDK "
            "provider first asks the runtime to `shutdown` and waits up to "
            "`SDKConfig.shutdown_timeout_seconds` (default 1.0 s, kept) before the ladder.",
            "From `cancel()` to the end of `dispose()` (for process_execute: to the return of "
            "the cancelled call), then no descendant process may be left running.",
            "cooperative: the child stops on cancel / shutdown / stdin EOF / SIGTERM. ignores "
            "SIGTERM: the child ignores the cancel request (ACP `session/cancel`, SDK "
            "`shutdown`), stdin EOF and SIGTERM, so only SIGKILL ends it (expect about "
            "EOF + TERM graces).",
        ],
    )
    subjects: dict[str, Subject] = {}
    for behaviour in (COOPERATIVE, STUBBORN):
        subjects[f"ACP, {behaviour}"] = run_subject(ctx, "acp", acp_provider(behaviour))
        subjects[f"SDK, {behaviour}"] = run_subject(ctx, "sdk", sdk_provider(behaviour))
        subjects[f"process_execute, {behaviour}"] = process_subject(ctx, behaviour)
    samples: dict[str, Sample] = await paired(subjects, warmup=1, repeat=ctx.reps(6, 2))
    for name, sample in samples.items():
        target = Target("<", 100, "ms") if name.endswith(COOPERATIVE) else None
        section.add(f"cancel-to-gone, {name}", sample.scaled(1000), "ms", target)
    return [section]
