"""Delegation: 30 parent requests, each delegating once, through the process-wide limit of 3.

With three children at a time, 30 children are ten waves, so the floor is ten times one child
alone; the target is at most 1.1× that floor.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import anyio
from _context import BenchError, Context
from _report import Section, Target
from _timing import Sample, Subject, paired, ratios
from case_model import MODEL, scripted_server
from model_agent import Agent, AgentConfig, AgentEvent, ChildEnded, ChildStarted, ModelEndpoint

PARENTS = 30
LIMIT = 3
CHILD_TASK = "child-task: answer done"
CHILD_ANSWER = "child done"


@dataclass(slots=True)
class Concurrency:
    running: int = 0
    peak: int = 0

    def observe(self, event: AgentEvent) -> None:
        if isinstance(event, ChildStarted):
            self.running += 1
            self.peak = max(self.peak, self.running)
        elif isinstance(event, ChildEnded):
            self.running -= 1


def _parent_key(round_index: int, parent: int) -> str:
    return f"parent-r{round_index:03d}-p{parent:02d}:"


def delegation_rules(rounds: int, child_ms: int) -> list[dict[str, object]]:
    """The stub's rules: every parent of every round delegates one child, answered after
    `child_ms` (`profile_case.py` replays them too)."""
    call = {
        "name": "subagent_delegate",
        "arguments": {"task": CHILD_TASK, "description": "bench child"},
    }
    rules: list[dict[str, object]] = [
        {
            "match": _parent_key(r, p),
            "replies": [{"tool_calls": [call]}, {"text": "parent done"}],
        }
        for r in range(rounds)
        for p in range(PARENTS)
    ]
    rules.append(
        {
            "match": "child-task",
            "replies": [{"text": CHILD_ANSWER, "first_byte_delay_ms": child_ms}],
        }
    )
    return rules


def parents(ctx: Context, endpoint: ModelEndpoint, peaks: list[int]) -> Subject:
    rounds = iter(range(10_000))

    async def subject() -> float:
        round_index = next(rounds)
        seen = Concurrency()
        agents = [
            Agent(AgentConfig(endpoint=endpoint, workspace=ctx.work), observer=seen.observe)
            for _ in range(PARENTS)
        ]
        statuses: list[str] = []

        async def run_one(index: int) -> None:
            result = await agents[index].run(f"{_parent_key(round_index, index)} delegate")
            statuses.append(f"{result.status}:{result.output}")

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for index in range(PARENTS):
                group.start_soon(run_one, index)
        elapsed = time.perf_counter() - started
        if statuses != ["completed:parent done"] * PARENTS:
            raise BenchError(f"parents ended {sorted(set(statuses))}")
        peaks.append(seen.peak)
        return elapsed

    return subject


def one_child(ctx: Context, endpoint: ModelEndpoint) -> Subject:
    async def subject() -> float:
        agent = Agent(AgentConfig(endpoint=endpoint, workspace=ctx.work, depth=1))
        started = time.perf_counter()
        result = await agent.run(CHILD_TASK)
        elapsed = time.perf_counter() - started
        if result.status != "completed" or result.output != CHILD_ANSWER:
            raise BenchError(f"the lone child ended {result.status}")
        return elapsed

    return subject


async def delegation(ctx: Context) -> list[Section]:
    child_ms = 300 if not ctx.quick else 100
    warmup, repeat = 1, ctx.reps(4, 1)
    section = Section(
        "Delegation: 30 parents, each delegating once, limit 3",
        notes=[
            f"{PARENTS} parent `Agent.run`s at once (ask mode, depth 0) on the scripted model "
            f"server; each parent's model calls `subagent_delegate` once, then answers. Each "
            f"child's model reply waits {child_ms} ms before its first byte.",
            "Floor: ten waves of three, i.e. 10 × the wall time of one child agent run alone "
            "(depth 1, same reply), measured in the same round.",
        ],
    )
    peaks: list[int] = []
    async with scripted_server(
        ctx, "delegation", delegation_rules(warmup + repeat, child_ms)
    ) as url:
        endpoint = ModelEndpoint(base_url=url, api_key="unused", model=MODEL)
        samples = await paired(
            {"parents": parents(ctx, endpoint, peaks), "child": one_child(ctx, endpoint)},
            warmup=warmup,
            repeat=repeat,
        )
    floor = samples["child"].scaled(PARENTS / LIMIT)
    section.add("30 parents, wall time", samples["parents"], "s")
    section.add("one child alone", samples["child"].scaled(1000), "ms")
    section.add(
        "30 parents / (10 × one child)", ratios(samples["parents"], floor), "×", Target("<=", 1.1)
    )
    section.add(
        "max concurrent children observed",
        Sample(tuple(float(p) for p in peaks[warmup:])),
        "children",
    )
    return [section]
