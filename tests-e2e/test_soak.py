"""Soak: 200 mixed runs through the ACP and SDK providers, at most 20 at once.

Kinds: complete, crash, hang + cancel (cancelled once the child hangs in the prompt),
permission, TERM-trapping child — on the scripted fake children (fast to start) plus a few runs
of `harness acp-agent` / `harness sdk-runtime` on the scripted model. Providers use the short graces EOF 0.5 s, TERM 0.5 s, KILL 1.0 s. Afterwards no
process of any run is alive, there are no zombies, and the open file descriptors are back to
their starting count; the test prints the three figures.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import psutil
import pytest
from harness._demo.kit import acp_agent_provider, sdk_runtime_provider, wait_for_file
from harness._demo.scenario import SHORT_GRACES, ScenarioContext
from subagent_acp import ACPConfig, ACPProvider
from subagent_acp.testing import script_env
from subagent_core import (
    CancelSignal,
    SubagentProvider,
    SubagentRequest,
    SubagentResult,
    SubagentStartError,
)
from subagent_core.testing import containment_processes, reap_adopted
from subagent_sdk import SDKConfig, SDKProvider
from subagent_sdk.testing import FakeScript

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="counts /proc/self/fd"),
]

RUNS = 200
AT_ONCE = 20
EOF_GRACE, TERM_GRACE, KILL_GRACE = SHORT_GRACES


@dataclass(frozen=True)
class Case:
    kind: str
    provider: Callable[[Path], SubagentProvider]
    """Builds the run's provider; the path is the marker a hanging child writes once it hangs."""
    cancel: bool
    """Cancel once the child has written the marker (it hangs in the prompt by then)."""
    check: Callable[[SubagentResult], bool]


def _same(provider: SubagentProvider) -> Callable[[Path], SubagentProvider]:
    return lambda marker: provider


def _acp(env: dict[str, str], permission: Literal["allow", "reject"] = "reject") -> ACPProvider:
    return ACPProvider(
        ACPConfig(
            command=sys.executable,
            args=["-m", "subagent_acp.testing"],
            env=env,
            permission=permission,
            dispose_eof_grace_seconds=EOF_GRACE,
            dispose_grace_seconds=TERM_GRACE,
            dispose_kill_grace_seconds=KILL_GRACE,
        )
    )


def _sdk(script: FakeScript) -> SDKProvider:
    return SDKProvider(
        SDKConfig(
            command=sys.executable,
            args=["-m", "subagent_sdk.testing", "--json", script.to_json()],
            dispose_eof_grace_seconds=EOF_GRACE,
            dispose_grace_seconds=TERM_GRACE,
            dispose_kill_grace_seconds=KILL_GRACE,
        )
    )


def _completed(text: str) -> Callable[[SubagentResult], bool]:
    return lambda r: r == SubagentResult(stop_reason="completed", output=text)


def _aborted(r: SubagentResult) -> bool:
    return r.stop_reason == "aborted" and r.diagnostic is None


SDK_CRASH = (
    "Subagent failure (provider: dsh-sdk; stage: session-run; category: transport; exit code: 3)"
)
ACP_CRASH = "Subagent failure (provider: acp; stage: process; category: process-exit; exit code: 3)"


def _cases(context: ScenarioContext) -> list[Case]:
    """One of each kind; the soak cycles through them (self-hosted ones are rarer)."""
    return [
        Case(
            "acp complete",
            _same(_acp(script_env({"text": "acp ok", "chunks": 2}))),
            False,
            _completed("acp ok"),
        ),
        Case(
            "acp crash",
            _same(_acp(script_env({"crash": {"at": "prompt", "exit_code": 3}}))),
            False,
            lambda r: r.stop_reason == "error" and r.diagnostic == ACP_CRASH,
        ),
        Case(
            "acp hang + cancel",
            lambda marker: _acp(
                script_env({"hang_at": "prompt", "markers": {"at": "prompt", "path": str(marker)}})
            ),
            True,
            _aborted,
        ),
        Case(
            "acp permission",
            _same(_acp(script_env({"permission": {"tool_kind": "execute"}, "text": "!"}), "allow")),
            False,
            _completed("[permission selected allow]!"),
        ),
        Case(
            "acp TERM-trapping",
            _same(_acp(script_env({"trap_sigterm": True, "ignore_eof": True, "text": "trap"}))),
            False,
            _completed("trap"),
        ),
        Case(
            "sdk complete",
            _same(_sdk(FakeScript(text="sdk ok", deltas=2))),
            False,
            _completed("sdk ok"),
        ),
        Case(
            "sdk crash",
            _same(_sdk(FakeScript(exit_during_prompt=3))),
            False,
            lambda r: r.stop_reason == "error" and r.diagnostic == SDK_CRASH,
        ),
        Case(
            "sdk hang + cancel",
            lambda marker: _sdk(FakeScript(hang_at="prompt", ready_file=str(marker))),
            True,
            _aborted,
        ),
        Case(
            "sdk TERM-trapping",
            _same(_sdk(FakeScript(text="trap", trap_sigterm=True, ignore_eof=True))),
            False,
            _completed("trap"),
        ),
    ]


def _self_cases(context: ScenarioContext) -> list[Case]:
    return [
        Case(
            "harness acp-agent",
            _same(acp_agent_provider(context, extra_args=("--mode", "ask"))),
            False,
            _completed("soak reply"),
        ),
        Case(
            "harness sdk-runtime",
            _same(sdk_runtime_provider(context, extra_args=("--mode", "ask"))),
            False,
            _completed("soak reply"),
        ),
    ]


async def _one(case: Case, workspace: Path, index: int) -> SubagentResult:
    marker = workspace / f"hung-{index}"
    cancel = CancelSignal()
    request = SubagentRequest(prompt="SOAK: reply", cwd=workspace, cancel=cancel)
    try:
        run = await case.provider(marker).start(request)
    except SubagentStartError as error:
        return SubagentResult(stop_reason="error", diagnostic=f"start: {error}")
    result: SubagentResult | None = None
    async with run, anyio.create_task_group() as tg:
        if case.cancel:

            async def cancel_once_hung() -> None:
                await wait_for_file(marker)
                cancel.cancel()

            tg.start_soon(cancel_once_hung)
        result = await run.result()
        tg.cancel_scope.cancel()
    assert result is not None
    return result


def _fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def _alive_and_zombies() -> tuple[int, int]:
    reap_adopted()
    # The guard server and its idle guards live as long as this process; they are not runs.
    infrastructure = containment_processes()
    children = [
        child
        for child in psutil.Process().children(recursive=True)
        if child.pid not in infrastructure
    ]
    zombies = 0
    alive = 0
    for child in children:
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                zombies += 1
            else:
                alive += 1
        except psutil.NoSuchProcess:
            pass
    return alive, zombies


async def test_soak_200_mixed_runs(
    scripted_model: Any, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = [{"match": "SOAK", "replies": [{"text": "soak reply"}]}]
    failures: list[str] = []
    kinds: Counter[str] = Counter()
    with anyio.fail_after(600):
        async with scripted_model(rules) as server:
            context = ScenarioContext(
                base_url=server.base_url, workspace=workspace, state_dir=workspace.parent / "state"
            )
            plain = _cases(context)
            hosted = _self_cases(context)
            # Warm-up: the first run of each kind creates lazily-built state (imports, loop
            # helpers) whose descriptors are not leaks.
            for warm, case in enumerate([*plain, *hosted]):
                await _one(case, workspace, -1 - warm)
            fds_before = _fd_count()
            plan = [
                hosted[i // 25 % len(hosted)] if i % 25 == 24 else plain[i % len(plain)]
                for i in range(RUNS)
            ]
            limiter = anyio.CapacityLimiter(AT_ONCE)

            async def run(index: int, case: Case) -> None:
                async with limiter:
                    result = await _one(case, workspace, index)
                kinds[case.kind] += 1
                if not case.check(result):
                    failures.append(f"#{index} {case.kind}: {result}")

            async with anyio.create_task_group() as tg:
                for index, case in enumerate(plan):
                    tg.start_soon(run, index, case)
            fds_after = _fd_count()
    alive, zombies = _alive_and_zombies()
    with capsys.disabled():
        _report(kinds, alive, zombies, fds_before, fds_after)
    assert failures == []
    assert sum(kinds.values()) == RUNS
    assert alive == 0
    assert zombies == 0
    assert fds_after == fds_before


def _report(kinds: Counter[str], alive: int, zombies: int, fds_before: int, fds_after: int) -> None:
    print(
        f"\nsoak: {RUNS} runs ({dict(kinds)}), at most {AT_ONCE} at once, graces EOF "
        f"{EOF_GRACE} s / TERM {TERM_GRACE} s / KILL {KILL_GRACE} s"
    )
    print(f"soak: processes alive {alive}, zombies {zombies}, fds {fds_before} -> {fds_after}")
